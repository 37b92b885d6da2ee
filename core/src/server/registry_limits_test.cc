// Bounded resources at paamd's door: a connection that never registers is closed after the
// registration timeout, and shed for newer ones; max_clients counts registered clients and
// answers a client over it with an error; at the descriptor limit the control thread neither
// spins nor locks clients out; client-given names reach the log printable and bounded; with
// lock_memory, regions are locked only up to the caps. Cases that change process-wide state
// (RLIMIT_NOFILE, mlockall) run the server in a forked child and talk to it from here.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/printable.h"
#include "paam/client.h"
#include "protocol/unix_socket.h"
#include "protocol/wire.h"
#include "server/server.h"
#include "server/test_socket.h"
#include "shm/layout.h"

namespace paam {
namespace {

using namespace std::chrono_literals;

using test_util::TempSocket;

ServerOptions BaseOptions() {
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.device_cpu = -2;  // do not pin: tests run on small CI machines
  return o;
}

std::unique_ptr<Server> StartServer(const ServerOptions& o) {
  auto s = Server::Start(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s.value()) : nullptr;
}

ClientOptions ClientFor(const std::string& socket, const std::string& name = "limits-test") {
  ClientOptions c;
  c.socket_path = socket;
  c.name = name;
  c.priority = 1;
  c.kernels = {{"vector_add", 4096, 4096}};
  c.connect_timeout_ms = 10000;  // generous: a busy 2-core machine
  return c;
}

std::vector<uint8_t> RegisterBytes(const std::string& name) {
  wire::RegisterRequest req;
  req.version = shm::kProtocolVersion;
  req.chain_priority = 1;
  req.client_name = name;
  req.kernels = {{"vector_add", 4096, 4096}};
  return wire::Encode(req);
}

// One vector_add of 4 floats; true when the answer is right.
bool Serves(Client& c) {
  const int k = c.KernelIndex("vector_add");
  const float in[8] = {1, 2, 3, 4, 10, 20, 30, 40};
  std::memcpy(c.Input(k).data(), in, sizeof(in));
  const uint64_t params[4] = {4, 0, 0, 0};
  uint64_t out_bytes = 0;
  if (!c.Call(k, sizeof(in), params, &out_bytes).ok() || out_bytes != 16) return false;
  float out[4];
  std::memcpy(out, c.Output(k).data(), sizeof(out));
  return out[0] == 11 && out[3] == 44;
}

// True once the server has hung up on fd (a message it sent first is read and dropped), false
// if it has not within `ms`.
bool HungUpWithin(int fd, int ms) {
  const uint64_t deadline = NowNs() + uint64_t(ms) * 1'000'000;
  while (NowNs() < deadline) {
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    const int left = static_cast<int>((deadline - NowNs()) / 1'000'000) + 1;
    if (poll(&p, 1, left) <= 0) continue;
    if (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) return true;
    std::vector<uint8_t> bytes;
    std::vector<UniqueFd> fds;
    if (RecvMessage(fd, &bytes, &fds, 0).code() == Errc::kClosed) return true;
  }
  return false;
}

size_t CountLines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Registration timeout and max_clients (in-process server)

TEST(RegistryLimits, IdleConnectionsAreClosedAfterTheRegistrationTimeout) {
  ServerOptions o = BaseOptions();
  o.registration_timeout_ms = 1000;  // far more than a real client takes, even on a busy machine
  testing::internal::CaptureStderr();
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 3; ++i) {
    auto fd = ConnectUnix(o.socket_path);
    ASSERT_TRUE(fd.ok()) << fd.status().ToString();
    idle.push_back(std::move(fd.value()));
  }
  auto c = Client::Connect(ClientFor(o.socket_path));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (auto& fd : idle) EXPECT_TRUE(HungUpWithin(fd.get(), 10000)) << "an idle connection was never closed";
  // The timeout is for registration only: the registered client is served long after it.
  std::this_thread::sleep_for(1100ms);
  EXPECT_TRUE(Serves(**c));
  EXPECT_GE(server->Stats().connections_dropped, 3u);
  c->reset();
  server.reset();
  const std::string log = testing::internal::GetCapturedStderr();
  // Counted, and logged at a bounded rate: the first at once, the others (close together)
  // summed into one line when the server stops.
  EXPECT_LE(CountLines(log, "did not register within 1000 ms"), 2u) << log;
  EXPECT_NE(log.find("(3 since start"), std::string::npos) << log;
}

TEST(RegistryLimits, IdleConnectionsDoNotLockRealClientsOutOfMaxClients) {
  ServerOptions o = BaseOptions();
  o.max_clients = 4;
  o.registration_timeout_ms = 60'000;  // not what lets the real clients in
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 4; ++i) {
    auto fd = ConnectUnix(o.socket_path);
    ASSERT_TRUE(fd.ok()) << fd.status().ToString();
    idle.push_back(std::move(fd.value()));
  }
  std::this_thread::sleep_for(200ms);  // all four accepted: what used to fill max_clients
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 4; ++i) {
    auto c = Client::Connect(ClientFor(o.socket_path));
    ASSERT_TRUE(c.ok()) << "client " << i << ": " << c.status().ToString();
    clients.push_back(std::move(c.value()));
  }
  for (auto& c : clients) EXPECT_TRUE(Serves(*c));
  // Unregistered connections are bounded too: beyond max_clients of them, the oldest go.
  size_t shed = 0;
  for (auto& fd : idle) shed += PeerHungUp(fd.get());
  EXPECT_GE(shed, 1u);
  EXPECT_EQ(server->Stats().active_clients, 4u);
}

TEST(RegistryLimits, AClientOverMaxClientsReceivesTheErrorReply) {
  ServerOptions o = BaseOptions();
  o.max_clients = 2;
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  auto a = Client::Connect(ClientFor(o.socket_path));
  auto b = Client::Connect(ClientFor(o.socket_path));
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = Client::Connect(ClientFor(o.socket_path));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kResourceExhausted) << c.status().ToString();
  EXPECT_NE(c.status().message().find("limit of 2 clients"), std::string::npos) << c.status().ToString();
  // A client that sends its registration only once the server has accepted the connection
  // gets the reply too, not a closed connection.
  auto fd = ConnectUnix(o.socket_path);
  ASSERT_TRUE(fd.ok());
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(SendMessage(fd->get(), RegisterBytes("late")).ok()) << "the server closed the connection first";
  std::vector<uint8_t> bytes;
  std::vector<UniqueFd> fds;
  ASSERT_TRUE(RecvMessage(fd->get(), &bytes, &fds, 10000).ok());
  auto reply = wire::DecodeRegisterReply(bytes.data(), bytes.size());
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, Errc::kResourceExhausted);
  EXPECT_NE(reply->message.find("limit of 2 clients"), std::string::npos) << reply->message;
  // A slot given back is taken by the next client.
  a->reset();
  auto d = Client::Connect(ClientFor(o.socket_path));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(Serves(**d));
}

// ---------------------------------------------------------------------------------------------
// Client names in the log

// A server that answers and closes before the client has sent its registration (shed at its
// descriptor limit, timed out, refused by its policy): the client reports the server's reason,
// whether its send came before the close or failed after it (which of the two happens is up to
// the scheduler: twenty attempts).
TEST(RegistryLimits, AClientAnsweredBeforeItSendsGetsTheServersReason) {
  const std::string path = TempSocket();
  auto listener = ListenUnix(path);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  for (int i = 0; i < 20; ++i) {
    std::thread door([&] {
      pollfd p{listener->get(), POLLIN, 0};
      if (poll(&p, 1, 10000) != 1) return;
      const int fd = accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      wire::RegisterReply reply;
      reply.version = shm::kProtocolVersion;
      reply.status = Errc::kResourceExhausted;
      reply.message = "server is out of file descriptors";
      (void)SendMessage(fd, wire::Encode(reply));
      close(fd);
    });
    auto c = Client::Connect(ClientFor(path));
    door.join();
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), Errc::kResourceExhausted) << "attempt " << i << ": " << c.status().ToString();
    EXPECT_EQ(c.status().message(), "server is out of file descriptors");
  }
}

TEST(RegistryLimits, ClientNamesReachTheLogPrintableAndBounded) {
  const std::string forged = "evil\npaamd: forged line\x1b[31m" + std::string(200, 'x');
  const bool verbose = LogVerbose();
  LogVerbose() = true;  // registrations are logged
  testing::internal::CaptureStderr();
  ServerOptions o = BaseOptions();
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  {
    auto c = Client::Connect(ClientFor(o.socket_path, forged));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE(Serves(**c));
  }
  // One that goes away without deregistering: its name is in the monitor's line too.
  auto fd = ConnectUnix(o.socket_path);
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(SendMessage(fd->get(), RegisterBytes(forged)).ok());
  std::vector<uint8_t> bytes;
  std::vector<UniqueFd> fds;
  ASSERT_TRUE(RecvMessage(fd->get(), &bytes, &fds, 10000).ok());
  fds.clear();
  fd->reset();
  for (int i = 0; i < 1000 && server->Stats().clients_reaped == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server->Stats().clients_reaped, 1u);
  server.reset();
  const std::string log = testing::internal::GetCapturedStderr();
  LogVerbose() = verbose;
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    EXPECT_EQ(line.rfind("paamd: ", 0), 0u) << "a line paamd did not write: " << line;
    EXPECT_NE(line.rfind("paamd: forged", 0), 0u) << "a forged line: " << line;
  }
  // Two registrations and one departure.
  EXPECT_EQ(CountLines(log, "evil\\x0apaamd: forged line\\x1b[31mxxx"), 3u) << log;
  EXPECT_EQ(log.find(std::string(100, 'x')), std::string::npos) << "the name is not bounded: " << log;
}

TEST(RegistryLimits, PrintableEscapesWhatIsNotPrintableAndCutsLongText) {
  EXPECT_EQ(Printable("cam-front_1"), "cam-front_1");
  EXPECT_EQ(Printable(std::string("a\nb\x1b[0m\\\x00\xff", 10)), "a\\x0ab\\x1b[0m\\\\\\x00\\xff");
  EXPECT_EQ(Printable(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(Printable(std::string(65, 'x')), std::string(61, 'x') + "...");
  EXPECT_EQ(Printable(std::string(70, '\n')).size(), 63u);  // 15 escapes of 4, then "..."
}

// ---------------------------------------------------------------------------------------------
// A server in a child process (its own descriptor limit, its own memory locking)

struct ForkedServer {
  pid_t pid = -1;
  std::string socket, log_path;
  int stop_fd = -1;  // closing it asks the child to stop

  ~ForkedServer() {
    Stop();
    unlink(log_path.c_str());
  }
  void Stop() {
    if (pid <= 0) return;
    close(stop_fd);
    int status = 0;
    // A child that does not stop within 30 s is killed rather than hanging the test.
    for (int i = 0; i < 3000 && waitpid(pid, &status, WNOHANG) == 0; ++i) std::this_thread::sleep_for(10ms);
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    pid = -1;
  }
  std::string Log() const {
    std::ifstream f(log_path);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
};

// Runs a server with `o` in a child whose soft descriptor limit is `nofile` (0: unchanged) and
// whose log goes to a file; returns once it serves (pid <= 0 if it could not start).
std::unique_ptr<ForkedServer> ForkServer(const ServerOptions& o, rlim_t nofile) {
  auto f = std::make_unique<ForkedServer>();
  f->socket = o.socket_path;
  f->log_path = o.socket_path + ".log";
  int ready[2], stop[2];
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(stop, O_CLOEXEC) != 0) return f;
  const pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(stop[1]);
    const int log = open(f->log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    dup2(log, 2);
    close(log);
    if (nofile > 0) {
      rlimit r{};
      getrlimit(RLIMIT_NOFILE, &r);
      r.rlim_cur = nofile;
      setrlimit(RLIMIT_NOFILE, &r);
    }
    auto s = Server::Start(o);
    if (!s.ok()) std::fprintf(stderr, "cannot start: %s\n", s.status().ToString().c_str());
    const char ok = s.ok() ? '1' : '0';
    (void)!write(ready[1], &ok, 1);
    if (s.ok()) {
      char b;
      while (read(stop[0], &b, 1) != 0 && errno == EINTR) {
      }
      (*s)->Stop();
    }
    std::fflush(stderr);
    _exit(s.ok() ? 0 : 1);
  }
  close(ready[1]);
  close(stop[0]);
  f->pid = pid;
  f->stop_fd = stop[1];
  char ok = '0';
  if (read(ready[0], &ok, 1) != 1 || ok != '1') f->Stop();
  close(ready[0]);
  return f;
}

// The tid of the child's control thread ("paamd-control"), or -1.
long ControlThread(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  long tid = -1;
  while (dirent* e = readdir(d)) {
    std::ifstream comm(dir + "/" + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "paamd-control") tid = std::atol(e->d_name);
  }
  closedir(d);
  return tid;
}

// CPU time (user + system, seconds) of a thread, from /proc/<pid>/task/<tid>/stat.
double ThreadCpuSeconds(pid_t pid, long tid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), {});
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));  // the fields after the name
  std::vector<std::string> fields;
  for (std::string x; rest >> x;) fields.push_back(x);
  if (fields.size() < 13) return -1;
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  return double(std::stoull(fields[11]) + std::stoull(fields[12])) / double(sysconf(_SC_CLK_TCK));
}

// Share of one core the control thread used over about a second.
double ControlThreadShare(pid_t pid) {
  const long tid = ControlThread(pid);
  if (tid < 0) return -1;
  const uint64_t t0 = NowNs();
  const double c0 = ThreadCpuSeconds(pid, tid);
  std::this_thread::sleep_for(1s);
  const double c1 = ThreadCpuSeconds(pid, tid);
  return (c1 - c0) / (double(NowNs() - t0) / 1e9);
}

uint64_t LockedKb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("VmLck:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

// A busy loop would use the whole core (about 1.0, less on a machine shared with others);
// 0.3 is generous for a control thread that sleeps between events.
constexpr double kNoSpin = 0.3;

TEST(RegistryLimits, AtTheDescriptorLimitIdleConnectionsAreShedWithoutSpinning) {
  ServerOptions o = BaseOptions();
  o.registration_timeout_ms = 60'000;  // not what frees the descriptors
  auto srv = ForkServer(o, 48);
  ASSERT_GT(srv->pid, 0) << srv->Log();
  // More idle connections than the server has descriptors for.
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 80; ++i) {
    auto fd = ConnectUnix(srv->socket);
    ASSERT_TRUE(fd.ok()) << fd.status().ToString();
    idle.push_back(std::move(fd.value()));
  }
  std::this_thread::sleep_for(300ms);
  const double share = ControlThreadShare(srv->pid);
  EXPECT_GE(share, 0.0);
  EXPECT_LT(share, kNoSpin) << "the control thread spins at the descriptor limit";
  // A real client still gets in (the oldest idle connections make room).
  auto c = Client::Connect(ClientFor(srv->socket));
  ASSERT_TRUE(c.ok()) << c.status().ToString() << "\n" << srv->Log();
  EXPECT_TRUE(Serves(**c));
  size_t shed = 0;
  for (auto& fd : idle) shed += PeerHungUp(fd.get());
  EXPECT_GE(shed, 30u);  // 48 descriptors cannot hold 80 connections
}

TEST(RegistryLimits, AtTheDescriptorLimitNewClientsAreRefusedWithoutSpinningUntilDescriptorsFreeUp) {
  ServerOptions o = BaseOptions();
  auto srv = ForkServer(o, 40);
  ASSERT_GT(srv->pid, 0) << srv->Log();
  // Registered clients until the server runs out of descriptors: the one that does not fit
  // is told why.
  std::vector<std::unique_ptr<Client>> clients;
  Status refused;
  for (int i = 0; i < 64 && refused.ok(); ++i) {
    auto c = Client::Connect(ClientFor(srv->socket));
    if (c.ok()) {
      clients.push_back(std::move(c.value()));
    } else {
      refused = c.status();
    }
  }
  ASSERT_FALSE(refused.ok()) << "40 descriptors held 64 clients";
  EXPECT_EQ(refused.code(), Errc::kResourceExhausted) << refused.ToString();
  EXPECT_NE(refused.message().find("file descriptors"), std::string::npos) << refused.ToString();
  ASSERT_GE(clients.size(), 4u);
  // More knock; each is answered, and the control thread does not spin meanwhile.
  std::vector<UniqueFd> knocking;
  for (int i = 0; i < 6; ++i) {
    auto fd = ConnectUnix(srv->socket);
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(SendMessage(fd->get(), RegisterBytes("knocking")).ok());
    knocking.push_back(std::move(fd.value()));
  }
  const double share = ControlThreadShare(srv->pid);
  EXPECT_GE(share, 0.0);
  EXPECT_LT(share, kNoSpin) << "the control thread spins at the descriptor limit";
  for (auto& fd : knocking) {
    std::vector<uint8_t> bytes;
    std::vector<UniqueFd> fds;
    ASSERT_TRUE(RecvMessage(fd.get(), &bytes, &fds, 10000).ok());
    auto reply = wire::DecodeRegisterReply(bytes.data(), bytes.size());
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply->status, Errc::kResourceExhausted) << reply->message;
  }
  // Descriptors free up as clients leave; the next client is served.
  clients.resize(clients.size() - 4);
  auto c = Client::Connect(ClientFor(srv->socket));
  ASSERT_TRUE(c.ok()) << c.status().ToString() << "\n" << srv->Log();
  EXPECT_TRUE(Serves(**c));
}

// ---------------------------------------------------------------------------------------------
// Locked memory

TEST(RegistryLimits, LockedMemoryIsCappedInTotalAndPerClient) {
  ServerOptions o = BaseOptions();
  o.lock_memory = true;
  o.lock_total_bytes = 3ull << 20;
  o.lock_client_bytes = 1ull << 20;
  auto srv = ForkServer(o, 0);
  ASSERT_GT(srv->pid, 0) << srv->Log();
  if (srv->Log().find("memory locked (mlockall") == std::string::npos) {
    GTEST_SKIP() << "this process may not lock its memory: " << srv->Log();
  }
  if (LockedKb(srv->pid) == 0) {  // the sanitizers' interceptors make mlockall a no-op
    GTEST_SKIP() << "mlockall succeeded but locked nothing";
  }
  // Three regions of 192 KiB in and out per registration: two fit under the per-client cap;
  // three registrations and one region of a fourth under the total cap.
  const uint64_t region = shm::ComputeRegionLayout(192 << 10, 192 << 10).mapping_bytes;
  ASSERT_LE(2 * region, o.lock_client_bytes);
  ASSERT_GT(3 * region, o.lock_client_bytes);
  const uint64_t capped = 7 * region;  // 2 + 2 + 2 + 1
  ASSERT_LE(capped, o.lock_total_bytes);
  ASSERT_GT(capped + region, o.lock_total_bytes);
  auto options = [&] {
    ClientOptions c = ClientFor(srv->socket);
    c.kernels = {{"vector_add", 192 << 10, 192 << 10}, {"matmul", 192 << 10, 192 << 10},
                 {"reduction", 192 << 10, 192 << 10}};
    return c;
  };
  // A first registration sets up what the control thread keeps (its malloc arena, locked
  // as a whole under mlockall) before the baseline is taken; its region is given back.
  {
    auto warm = Client::Connect(ClientFor(srv->socket));
    ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  }
  std::this_thread::sleep_for(100ms);
  const uint64_t before_kb = LockedKb(srv->pid);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 5; ++i) {
    auto c = Client::Connect(options());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients.push_back(std::move(c.value()));
  }
  for (auto& c : clients) EXPECT_TRUE(Serves(*c));  // locked or not, every region serves
  const uint64_t grew_kb = LockedKb(srv->pid) - before_kb;
  // Channels and the heap add a little besides the regions.
  EXPECT_GE(grew_kb, capped / 1024) << srv->Log();
  EXPECT_LE(grew_kb, (o.lock_total_bytes >> 10) + 256) << "15 regions, " << 15 * region / 1024 << " KiB\n"
                                                       << srv->Log();
  EXPECT_EQ(CountLines(srv->Log(), "not locked"), 1u) << srv->Log();
  // Clients that leave give their share back: a new registration is locked again.
  clients.clear();
  for (int i = 0; i < 1000 && LockedKb(srv->pid) > before_kb + 256; ++i) std::this_thread::sleep_for(10ms);
  const uint64_t after_kb = LockedKb(srv->pid);
  auto c = Client::Connect(options());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GE(LockedKb(srv->pid) - after_kb, 2 * region / 1024);
}

}  // namespace
}  // namespace paam
