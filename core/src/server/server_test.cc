// The server and client together, in one process (threads as clients). Multi-process cases
// (kill -9 of a client, the server killed, many processes) live in python/tests.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu_backend.h"
#include "common/clock.h"
#include "common/futex.h"
#include "common/realtime.h"
#include "paam/c_api.h"
#include "paam/client.h"
#include "protocol/unix_socket.h"
#include "protocol/wire.h"
#include "server/bucket_queue.h"
#include "server/server.h"
#include "server/test_socket.h"
#include "shm/layout.h"
#include "shm/mapping.h"

namespace paam {
namespace {

using test_util::TempSocket;

std::unique_ptr<Server> StartServer(int buckets = 1, uint64_t poll_ns = ServerOptions::kAutoPoll) {
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.levels = buckets;
  o.backend.device_cpu = -2;  // do not pin: tests run on small CI machines
  o.poll_ns = poll_ns;
  auto s = Server::Start(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s.value());
}

std::unique_ptr<Client> Connect(const Server& server, uint32_t priority, std::vector<KernelDecl> kernels,
                                WaitMode wait = WaitMode::kSuspend) {
  ClientOptions o;
  o.socket_path = server.socket_path();
  o.priority = priority;
  o.kernels = std::move(kernels);
  o.wait = wait;
  auto c = Client::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c.value()) : nullptr;
}

const uint64_t kNoParams[4] = {0, 0, 0, 0};

Status VectorAdd(Client& c, const std::vector<float>& a, const std::vector<float>& b, std::vector<float>* out) {
  const int k = c.KernelIndex("vector_add");
  const size_t n = a.size();
  auto in = c.Input(k);
  std::memcpy(in.data(), a.data(), n * 4);
  std::memcpy(in.data() + n * 4, b.data(), n * 4);
  uint64_t params[4] = {n, 0, 0, 0};
  uint64_t out_bytes = 0;
  Status st = c.Call(k, 2 * n * 4, params, &out_bytes);
  if (st.ok()) {
    out->resize(out_bytes / 4);
    std::memcpy(out->data(), c.Output(k).data(), out_bytes);
  }
  return st;
}

class WaitModes : public ::testing::TestWithParam<WaitMode> {};

TEST_P(WaitModes, RequestReturnsCorrectOutputAndTimestampsInStageOrder) {
  auto server = StartServer();
  auto c = Connect(*server, 5, {{"vector_add", 4096, 4096}}, GetParam());
  ASSERT_NE(c, nullptr);
  for (int iter = 0; iter < 50; ++iter) {
    std::vector<float> a(100), b(100), out;
    for (int i = 0; i < 100; ++i) {
      a[i] = float(i + iter);
      b[i] = float(2 * i);
    }
    Status st = VectorAdd(*c, a, b, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(out.size(), 100u);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(out[i], a[i] + b[i]);
  }
  RequestTimestamps t = c->Timestamps(0);
  EXPECT_LE(t.submitted, t.dequeued);
  EXPECT_LE(t.dequeued, t.picked);
  EXPECT_LE(t.picked, t.device_start);
  EXPECT_LE(t.device_start, t.device_end);
  EXPECT_LE(t.device_end, t.completed);
  EXPECT_LE(t.completed, t.woken);
}

// Order, from the request's own stamps: Submit returns before the kernel ends, and Ready()
// says false while it runs. (On a busy machine a check may land after the end; it then
// proves nothing and is skipped, never failed.)
TEST_P(WaitModes, AsyncSubmitLetsTheCallerWorkThenCollects) {
  auto server = StartServer();
  auto c = Connect(*server, 5, {{"spin", 0, 8}}, GetParam());
  uint64_t params[4] = {100'000'000, 0, 0, 0};  // 100 ms of CPU time
  const uint64_t t0 = NowNs();
  ASSERT_TRUE(c->Submit(0, 0, params).ok());
  const uint64_t submitted = NowNs();
  const bool ready_early = c->Ready(0);
  const uint64_t ready_checked = NowNs();
  EXPECT_EQ(c->Submit(0, 0, params).code(), Errc::kBusy);
  uint64_t out = 0;
  ASSERT_TRUE(c->Wait(0, &out).ok());
  const RequestTimestamps t = c->Timestamps(0);
  EXPECT_LT(submitted, t.completed) << "Submit must not wait for the kernel";
  if (ready_checked < t.device_end) EXPECT_FALSE(ready_early) << "Ready() before the kernel ended";
  EXPECT_GE(NowNs() - t0, 100'000'000u);
  uint64_t elapsed;
  std::memcpy(&elapsed, c->Output(0).data(), 8);
  EXPECT_GE(elapsed, 100'000'000u);
}

INSTANTIATE_TEST_SUITE_P(All, WaitModes, ::testing::Values(WaitMode::kSpin, WaitMode::kSuspend, WaitMode::kHybrid),
                         [](const auto& info) { return std::string(WaitModeName(info.param)); });

TEST(Server, QueuedRequestsRunByChainPriorityFifoAmongEquals) {
  auto server = StartServer(/*buckets=*/1);
  // A blocker occupies the single worker while the others queue up.
  auto blocker = Connect(*server, 100, {{"spin", 0, 8}});
  const std::vector<uint32_t> prios = {1, 5, 3, 5, 9, 3, 7};
  std::vector<std::unique_ptr<Client>> clients;
  for (uint32_t p : prios) clients.push_back(Connect(*server, p, {{"spin", 0, 8}}));
  // The order only says something if every request was queued while the blocker ran: the
  // stamps tell, and on a machine too busy for that the round repeats with a longer blocker.
  bool all_queued_behind_the_blocker = false;
  for (uint64_t block_ns = 300'000'000; !all_queued_behind_the_blocker && block_ns <= 2'400'000'000; block_ns *= 2) {
    uint64_t block[4] = {block_ns, 0, 0, 0};
    ASSERT_TRUE(blocker->Submit(0, 0, block).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    uint64_t tiny[4] = {100'000, 0, 0, 0};
    for (auto& c : clients) {
      ASSERT_TRUE(c->Submit(0, 0, tiny).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(3));  // distinct arrival order
    }
    ASSERT_TRUE(blocker->Wait(0, nullptr).ok());
    const RequestTimestamps b = blocker->Timestamps(0);
    all_queued_behind_the_blocker = true;
    std::vector<std::pair<uint64_t, size_t>> starts;  // (device_start, index)
    for (size_t i = 0; i < clients.size(); ++i) {
      ASSERT_TRUE(clients[i]->Wait(0, nullptr).ok());
      const RequestTimestamps t = clients[i]->Timestamps(0);
      all_queued_behind_the_blocker &= b.device_start < t.dequeued && t.dequeued < b.device_end;
      starts.push_back({t.device_start, i});
    }
    if (!all_queued_behind_the_blocker) continue;
    std::sort(starts.begin(), starts.end());
    std::vector<size_t> order;
    for (auto& s : starts) order.push_back(s.second);
    // priorities 9, 7, 5 (index 1 before 3), 3 (index 2 before 5), 1
    EXPECT_EQ(order, (std::vector<size_t>{4, 6, 1, 3, 2, 5, 0}));
  }
  EXPECT_TRUE(all_queued_behind_the_blocker) << "no round queued every request while the blocker ran";
}

TEST(Server, BucketsFollowDownSamplingOfChainPriorities) {
  auto server = StartServer(/*buckets=*/2);
  ASSERT_EQ(server->buckets(), 2);
  auto hi = Connect(*server, 10, {{"spin", 0, 8}});
  auto lo = Connect(*server, 1, {{"spin", 0, 8}});
  // Priorities {10, 1}, n = 2: rank 0 -> floor(0*2/2) = 0, rank 1 -> floor(1*2/2) = 1.
  EXPECT_EQ(hi->bucket(), 0);
  EXPECT_EQ(lo->bucket(), 1);
}

// Order, from the stamps: a short high-bucket request submitted while the low bucket's long
// kernel runs completes before that kernel ends. A round where the long kernel had not yet
// started when the short one came proves nothing and repeats (a busy machine).
TEST(Server, HigherBucketRunsWhileLowerBucketIsBusy) {
  auto server = StartServer(/*buckets=*/2);
  auto hi = Connect(*server, 10, {{"spin", 0, 8}});
  auto lo = Connect(*server, 1, {{"spin", 0, 8}});
  // 200 ms of CPU time for the low bucket, whose worker runs at nice 19: on a busy machine its
  // kernel lasts far longer than that.
  uint64_t longp[4] = {200'000'000, 0, 0, 0}, shortp[4] = {1'000'000, 0, 0, 0};
  bool overlapped = false;
  for (int round = 0; round < 3 && !overlapped; ++round) {
    ASSERT_TRUE(lo->Submit(0, 0, longp).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 100 * round));
    ASSERT_TRUE(hi->Call(0, 0, shortp, nullptr).ok());
    ASSERT_TRUE(lo->Wait(0, nullptr).ok());
    const RequestTimestamps h = hi->Timestamps(0), l = lo->Timestamps(0);
    overlapped = l.device_start < h.submitted;
    if (overlapped) EXPECT_LT(h.completed, l.device_end) << "the high bucket waited for the low bucket's kernel";
  }
  EXPECT_TRUE(overlapped) << "the low bucket's kernel never started before the high bucket's request";
}

// Two 200 ms kernels of one bucket: one after the other with its one lane (the paper's rule),
// side by side with --lanes 2 (the workers unpinned here, so on two cores).
class BucketLanes : public ::testing::TestWithParam<int> {};

TEST_P(BucketLanes, ABucketWithTwoLanesRunsTwoOfItsKernelsAtOnce) {
  const int lanes = GetParam();
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.levels = 2;
  o.backend.lanes = {lanes};
  o.backend.device_cpu = -2;
  auto started = Server::Start(o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  auto server = std::move(started.value());
  auto a = Connect(*server, 10, {{"spin", 0, 8}});
  auto b = Connect(*server, 10, {{"spin", 0, 8}});
  auto low = Connect(*server, 1, {{"spin", 0, 8}});
  ASSERT_TRUE(a && b && low);
  // 200 ms of CPU time each: long enough that, on a machine too busy to give the two lanes
  // two cores, both kernels still start before either ends.
  uint64_t params[4] = {200'000'000, 0, 0, 0};
  const uint64_t t0 = NowNs();
  ASSERT_TRUE(a->Submit(0, 0, params).ok());
  ASSERT_TRUE(b->Submit(0, 0, params).ok());
  ASSERT_TRUE(a->Wait(0, nullptr).ok());
  ASSERT_TRUE(b->Wait(0, nullptr).ok());
  const uint64_t both = NowNs() - t0;
  const RequestTimestamps ta = a->Timestamps(0), tb = b->Timestamps(0);
  const bool overlapped = std::max(ta.device_start, tb.device_start) < std::min(ta.device_end, tb.device_end);
  if (lanes == 2) {
    EXPECT_TRUE(overlapped) << "two lanes: the kernels must run side by side";
  } else {
    EXPECT_FALSE(overlapped) << "one lane: one kernel at a time";
    EXPECT_GE(both, 400'000'000u);
  }
  // the other bucket keeps its own lane (a short kernel: its worker runs at nice 19, which a
  // busy machine starves)
  uint64_t short_params[4] = {1'000'000, 0, 0, 0};
  ASSERT_TRUE(low->Call(0, 0, short_params, nullptr).ok());
}

INSTANTIATE_TEST_SUITE_P(OneOrTwo, BucketLanes, ::testing::Values(1, 2),
                         [](const auto& info) { return "lanes" + std::to_string(info.param); });

// Finds a thread of this process by its name (/proc/self/task/*/comm); 0 if none.
pid_t ThreadNamed(const std::string& name) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (DIR* d = opendir("/proc/self/task")) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string line;
        if (std::getline(comm, line) && line == name) {
          const auto tid = static_cast<pid_t>(std::stoi(e->d_name));  // e lives in d: read it first
          closedir(d);
          return tid;
        }
      }
      closedir(d);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// What the CPU backend's preemption points look at: a bucket's work counts from the push until
// its worker is done with it, not only while it is queued.
TEST(BucketQueue, PendingCountsEntriesUntilTheirWorkerIsDone) {
  BucketQueue q(4);
  QueueEntry e;
  EXPECT_EQ(q.Pending(), 0u);
  ASSERT_TRUE(q.TryPush(e));
  ASSERT_TRUE(q.TryPush(e));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.Pending(), 2u);
  QueueEntry out;
  ASSERT_TRUE(q.TryPop(&out));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.Pending(), 2u) << "a popped entry is still the bucket's until Done()";
  q.Done();
  EXPECT_EQ(q.Pending(), 1u);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(q.WaitPop(&out, stop, std::chrono::milliseconds(10)));
  EXPECT_EQ(q.Pending(), 1u);
  q.Done();
  EXPECT_EQ(q.Pending(), 0u);
}

TEST(Realtime, ThrottlingNoteNamesTheSettingAndIsEmptyWhenLiftedOrUnreadable) {
  const std::string dir = ::testing::TempDir();
  const std::string runtime = dir + "/paam_rt_runtime", period = dir + "/paam_rt_period";
  std::ofstream(period) << "1000000\n";
  std::ofstream(runtime) << "950000\n";
  const std::string note = RtThrottlingNote(runtime.c_str(), period.c_str());
  EXPECT_NE(note.find("950000 of every 1000000 us"), std::string::npos) << note;
  EXPECT_NE(note.find("sched_rt_runtime_us=-1"), std::string::npos) << note;
  std::ofstream(runtime) << "-1\n";
  EXPECT_EQ(RtThrottlingNote(runtime.c_str(), period.c_str()), "");
  EXPECT_EQ(RtThrottlingNote((dir + "/no_such_file").c_str(), period.c_str()), "");
  std::remove(runtime.c_str());
  std::remove(period.c_str());
}

// In a child process (mlockall's MCL_FUTURE would stay with the test binary): what
// LockMemory says, and the VmLck the kernel reports after it. mode 1 first lowers the memlock
// limit to 64 kB and, as root, gives up root (a user under a finite limit).
static std::pair<std::string, long> LockMemoryInChild(int mode) {
  int out[2];
  if (pipe(out) != 0) return {"pipe failed", -1};
  const pid_t pid = fork();
  if (pid == 0) {
    close(out[0]);
    if (mode == 1) {
      rlimit small{64 * 1024, 64 * 1024};
      if (setrlimit(RLIMIT_MEMLOCK, &small) != 0) _exit(3);
      if (geteuid() == 0 && setresuid(65534, 65534, 65534) != 0) _exit(4);
    }
    std::string said = LockMemory();
    long locked_kb = -1;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmLck:", 0) == 0) locked_kb = std::stol(line.substr(6));
    }
    said += "\n" + std::to_string(locked_kb);
    const ssize_t n = write(out[1], said.data(), said.size());
    _exit(n == static_cast<ssize_t>(said.size()) ? 0 : 5);
  }
  close(out[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return {"child failed with " + std::to_string(status), -1};
  }
  const size_t nl = got.rfind('\n');
  return {got.substr(0, nl), std::stol(got.substr(nl + 1))};
}

TEST(Realtime, LockMemoryLocksWherePermittedAndSaysWhyNotUnderAFiniteLimit) {
  auto [said, locked_kb] = LockMemoryInChild(0);
  ASSERT_GE(locked_kb, 0) << said;
  if (said.rfind("memory locked", 0) == 0) {
    EXPECT_GT(locked_kb, 0) << said;
  } else {  // refused here (no root, a finite limit, or a container): said, and nothing locked
    EXPECT_TRUE(said.find("not locked") != std::string::npos || said.find("denied") != std::string::npos)
        << said;
    EXPECT_EQ(locked_kb, 0) << said;
  }
  EXPECT_NE(said.find("malloc keeps freed memory"), std::string::npos) << said;
  // A user under a finite limit: not attempted, and the line says how to allow it.
  std::tie(said, locked_kb) = LockMemoryInChild(1);
  EXPECT_EQ(said.rfind("memory not locked: RLIMIT_MEMLOCK is 64 kB", 0), 0u) << said;
  EXPECT_NE(said.find("ulimit -l unlimited"), std::string::npos) << said;
  EXPECT_EQ(locked_kb, 0) << said;
}

TEST(Server, DispatcherRunsAtItsRealTimePriorityOrSaysWhyNot) {
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.device_cpu = -2;
  o.dispatcher_rt_priority = 7;
  auto s = Server::Start(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const pid_t tid = ThreadNamed("paamd-dispatch");
  ASSERT_NE(tid, 0) << "no thread named paamd-dispatch";
  EXPECT_NE(ThreadNamed("paamd-control"), 0);
  EXPECT_NE(ThreadNamed("paamd-w0.0.0"), 0);
  if (sched_getscheduler(tid) == SCHED_FIFO) {
    sched_param p{};
    ASSERT_EQ(sched_getparam(tid, &p), 0);
    EXPECT_EQ(p.sched_priority, 7);
    // Where the kernel throttles SCHED_FIFO threads, the server says so.
    const std::string throttling = RtThrottlingNote();
    bool noted = throttling.empty();
    for (int i = 0; i < 1000 && !noted; ++i) {
      for (const auto& n : (*s)->notes()) noted = noted || n == throttling;
      if (!noted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(noted) << "no note says that the kernel throttles SCHED_FIFO threads";
  } else {
    // Denied (no CAP_SYS_NICE, container): the server carries on and says so.
    bool noted = false;
    for (int i = 0; i < 1000 && !noted; ++i) {
      for (const auto& n : (*s)->notes()) noted = noted || n.find("dispatcher") != std::string::npos;
      if (!noted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(noted) << "SCHED_FIFO was not applied and no note says why";
  }
  // Without the option the dispatcher keeps normal scheduling.
  auto plain = StartServer();
  // Both servers name their dispatcher alike; the newest is the last task listed, so check
  // that at least one paamd-dispatch thread is SCHED_OTHER.
  bool other = false;
  for (int attempt = 0; attempt < 1000 && !other; ++attempt) {
    if (DIR* d = opendir("/proc/self/task")) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string line;
        if (std::getline(comm, line) && line == "paamd-dispatch" &&
            sched_getscheduler(static_cast<pid_t>(std::stoi(e->d_name))) == SCHED_OTHER) {
          other = true;
        }
      }
      closedir(d);
    }
    if (!other) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(other);
  plain->Stop();
  (*s)->Stop();
}

TEST(Server, ClearErrorsForBadRequests) {
  // Not running.
  ClientOptions o;
  o.socket_path = TempSocket();
  o.kernels = {{"spin", 0, 8}};
  auto none = Client::Connect(o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Errc::kServerNotRunning);
  EXPECT_NE(none.status().message().find(o.socket_path), std::string::npos);

  auto server = StartServer();
  o.socket_path = server->socket_path();
  o.kernels = {{"no_such_kernel", 16, 16}};
  auto unknown = Client::Connect(o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), Errc::kUnknownKernel);
  EXPECT_NE(unknown.status().message().find("vector_add"), std::string::npos) << "lists the kernels that exist";

  auto c = Connect(*server, 1, {{"vector_add", 64, 64}});
  uint64_t params[4] = {100, 0, 0, 0};
  EXPECT_EQ(c->Call(0, 800, params, nullptr).code(), Errc::kInputTooLarge);
  params[0] = 4;
  Status shape = c->Call(0, 24, params, nullptr);  // 24 bytes is not 2*4 floats
  EXPECT_EQ(shape.code(), Errc::kInvalidArgument);
  EXPECT_NE(shape.message().find("2*n floats"), std::string::npos) << shape.message();
  std::vector<float> out;
  EXPECT_TRUE(VectorAdd(*c, {1, 2}, {3, 4}, &out).ok()) << "the client still works after errors";
  EXPECT_EQ(out, (std::vector<float>{4, 6}));
}

// A registration made over the socket by hand (no Client): one vector_add region of 64 bytes.
// Descriptors in reply order: doorbell, wake eventfd, channel, region. `ok` is false (with a
// test failure recorded) if any step failed.
struct RawRegistration {
  bool ok = false;
  UniqueFd socket;
  wire::RegisterReply reply;
  std::vector<UniqueFd> fds;
};
RawRegistration RawRegister(const Server& server, uint32_t priority) {
  RawRegistration out;
  auto sock = ConnectUnix(server.socket_path());
  EXPECT_TRUE(sock.ok());
  if (!sock.ok()) return out;
  out.socket = std::move(sock.value());
  wire::RegisterRequest req;
  req.version = shm::kProtocolVersion;
  req.chain_priority = priority;
  req.kernels = {{"vector_add", 64, 64}};
  EXPECT_TRUE(SendMessage(out.socket.get(), wire::Encode(req)).ok());
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(RecvMessage(out.socket.get(), &bytes, &out.fds, 10000).ok());
  auto reply = wire::DecodeRegisterReply(bytes.data(), bytes.size());
  EXPECT_TRUE(reply.ok() && reply->status == Errc::kOk && out.fds.size() == 4);
  if (!reply.ok() || reply->status != Errc::kOk || out.fds.size() != 4) return out;
  out.reply = std::move(reply.value());
  out.ok = true;
  return out;
}

TEST(Server, GarbageInSharedMemoryLeavesTheServerUnharmed) {
  auto server = StartServer();
  // A raw client that registers, then scribbles over its ring and writes its wake eventfd.
  RawRegistration raw = RawRegister(*server, 3);
  ASSERT_TRUE(raw.ok);
  const wire::RegisterReply* reply = &raw.reply;
  std::vector<UniqueFd>& fds = raw.fds;
  auto ch = Mapping::Map(fds[2].get(), reply->channel_bytes);
  auto rg = Mapping::Map(fds[3].get(), reply->regions[0].mapping_bytes);
  ASSERT_TRUE(ch.ok() && rg.ok());
  auto* channel = ch->as<shm::ChannelHeader>();
  std::mt19937_64 rng(42);
  for (int round = 0; round < 20; ++round) {
    auto* raw = reinterpret_cast<uint64_t*>(channel->slots);
    for (size_t i = 0; i < sizeof(channel->slots) / 8; ++i) raw[i] = rng();
    // Also corrupt the region header the server must not trust.
    auto* h = rg->as<shm::RegionHeader>();
    h->input_capacity = rng();
    h->output_offset = rng();
    channel->head.store(round % 3 == 0 ? rng() : channel->head.load() + (rng() % 70));
    const uint64_t one = 1;
    ASSERT_EQ(write(fds[1].get(), &one, sizeof(one)), 8);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // An honest client is served correctly.
  auto c = Connect(*server, 1, {{"vector_add", 64, 64}});
  std::vector<float> out;
  ASSERT_TRUE(VectorAdd(*c, {1, 2, 3}, {1, 1, 1}, &out).ok());
  EXPECT_EQ(out, (std::vector<float>{2, 3, 4}));
  EXPECT_GT(server->Stats().protocol_errors + server->Stats().requests_failed, 0u);
}

// A raw client that registers, then writes into every byte it can get write access to through
// what the registration gave it: each descriptor mapped writable where the kernel lets it
// (directly, by mprotect-ing a read-only mapping, or reopened through /proc/self/fd), and
// garbage written to each descriptor it cannot map.
class Scribbler {
 public:
  explicit Scribbler(const Server& server) {
    RawRegistration raw = RawRegister(server, 7);
    if (!raw.ok) return;
    socket_ = std::move(raw.socket);
    fds_ = std::move(raw.fds);
    doorbell_bytes_ = raw.reply.doorbell_bytes;
    for (const UniqueFd& fd : fds_) {
      auto size = FdSize(fd.get());
      const size_t n = size.ok() ? *size : 0;
      void* p = MAP_FAILED;
      if (n > 0) {
        p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
        if (p == MAP_FAILED) {
          p = mmap(nullptr, n, PROT_READ, MAP_SHARED, fd.get(), 0);
          if (p != MAP_FAILED && mprotect(p, n, PROT_READ | PROT_WRITE) != 0) {
            munmap(p, n);
            p = MAP_FAILED;
          }
        }
        if (p == MAP_FAILED) {
          UniqueFd again(open(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), O_RDWR | O_CLOEXEC));
          if (again.valid()) p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, again.get(), 0);
        }
      }
      if (p != MAP_FAILED) {
        writable_.push_back({static_cast<uint8_t*>(p), n});
      } else {
        unmappable_.push_back(fd.get());
      }
    }
    ok_ = true;
  }
  ~Scribbler() {
    StopThread();
    for (auto [p, n] : writable_) munmap(p, n);
  }

  bool ok() const { return ok_; }
  const std::vector<UniqueFd>& fds() const { return fds_; }
  size_t doorbell_bytes() const { return doorbell_bytes_; }
  size_t writable_mappings() const { return writable_.size(); }

  // Writes zeros (or random bytes) over every writable byte, and a value into every other descriptor.
  void Scribble(bool garbage) {
    for (auto [p, n] : writable_) {
      if (garbage) {
        for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng_());
      } else {
        std::memset(p, 0, n);
      }
    }
    for (int fd : unmappable_) {
      uint64_t v = garbage ? rng_() : 1;
      (void)!write(fd, &v, sizeof(v));
    }
  }
  // Keeps writing zeros (every ~50 us) until destroyed.
  void StartThread() {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        Scribble(false);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  void StopThread() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  UniqueFd socket_;
  std::vector<UniqueFd> fds_;
  size_t doorbell_bytes_ = 0;
  std::vector<std::pair<uint8_t*, size_t>> writable_;
  std::vector<int> unmappable_;
  std::mt19937_64 rng_{7};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  bool ok_ = false;
};

TEST(Server, TheDoorbellCannotBeMadeWritableByAClient) {
  auto server = StartServer();
  Scribbler bad(*server);
  ASSERT_TRUE(bad.ok());
  ASSERT_FALSE(bad.fds().empty());
  const int bell = bad.fds()[0].get();
  const size_t n = bad.doorbell_bytes();
  void* w = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, bell, 0);
  EXPECT_EQ(w, MAP_FAILED) << "the shared doorbell maps writable";
  if (w != MAP_FAILED) munmap(w, n);
  void* r = mmap(nullptr, n, PROT_READ, MAP_SHARED, bell, 0);
  ASSERT_NE(r, MAP_FAILED) << std::strerror(errno);
  EXPECT_NE(mprotect(r, n, PROT_READ | PROT_WRITE), 0) << "a read-only doorbell mapping can be made writable";
  EXPECT_EQ(static_cast<const shm::DoorbellHeader*>(r)->magic, shm::kDoorbellMagic);
  munmap(r, n);
  EXPECT_LT(pwrite(bell, "\0\0\0\0", 4, 0), 0) << "the doorbell can be written with pwrite";
  EXPECT_NE(fallocate(bell, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(n)), 0)
      << "the doorbell's page can be punched out";
  EXPECT_NE(ftruncate(bell, 0), 0);
  EXPECT_GE(bad.writable_mappings(), 2u) << "its own channel and region stay writable";
}

TEST(Server, AClientScribblingOnItsMappingsCannotBreakOthersRegistration) {
  auto server = StartServer();
  Scribbler bad(*server);
  ASSERT_TRUE(bad.ok());
  bad.Scribble(/*garbage=*/true);
  bad.Scribble(/*garbage=*/false);
  bad.StartThread();
  for (int i = 0; i < 3; ++i) {
    auto c = Connect(*server, 1 + i, {{"vector_add", 64, 64}});
    ASSERT_NE(c, nullptr) << "registration " << i << " failed while another client scribbles";
    std::vector<float> out;
    ASSERT_TRUE(VectorAdd(*c, {1, 2}, {3, 4}, &out).ok());
    EXPECT_EQ(out, (std::vector<float>{4, 6}));
  }
  bad.StopThread();
}

TEST(Server, AClientScribblingOnItsMappingsCannotSlowOthersDown) {
  // poll_ns 0: the dispatcher sleeps whenever it is idle, so every request needs its wake-up.
  auto server = StartServer(1, /*poll_ns=*/0);
  auto c = Connect(*server, 1, {{"vector_add", 64, 64}}, WaitMode::kSuspend);
  ASSERT_NE(c, nullptr);
  Scribbler bad(*server);  // registers after the honest client, which is already connected
  ASSERT_TRUE(bad.ok());
  bad.Scribble(/*garbage=*/true);
  bad.StartThread();  // keeps writing 0 to everything it can write
  // A lost wake-up leaves the request to the dispatcher's 100 ms safety-net timeout. Were the
  // scribbler able to keep the dispatcher asleep, nearly every request would pay it; a busy
  // machine delays a few. So: count the requests of 50 ms or more, and allow a fifth of them.
  const int kRequests = 200, kSlowAllowed = kRequests / 5;
  int slow = 0;
  uint64_t worst = 0;
  for (int i = 0; i < kRequests && slow <= kSlowAllowed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the dispatcher falls asleep
    std::vector<float> out;
    const uint64_t t0 = NowNs();
    ASSERT_TRUE(VectorAdd(*c, {float(i)}, {1}, &out).ok());
    const uint64_t dt = NowNs() - t0;
    ASSERT_EQ(out, (std::vector<float>{float(i) + 1}));
    worst = std::max(worst, dt);
    if (dt >= 50'000'000) ++slow;
  }
  bad.StopThread();
  EXPECT_LE(slow, kSlowAllowed) << "requests took >= 50 ms (worst " << worst / 1000 << " us): wake-ups were lost";
}

TEST(Server, PollAlwaysServesAfterIdleAndStops) {
  // kPollAlways: the dispatcher and workers never sleep; requests after an idle gap are still
  // served, and Stop() still ends the polling threads.
  auto server = StartServer(2, ServerOptions::kPollAlways);
  ASSERT_EQ(server->poll_ns(), ServerOptions::kPollAlways);
  auto c = Connect(*server, 1, {{"vector_add", 64, 64}}, WaitMode::kSpin);
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<float> out;
    ASSERT_TRUE(VectorAdd(*c, {float(i)}, {2}, &out).ok());
    EXPECT_EQ(out, (std::vector<float>{float(i) + 2}));
  }
  c.reset();
  // A polling thread that missed the stop flag would hang Stop(); the bound, far above any
  // scheduling delay, only turns that hang into a clear failure.
  const uint64_t t0 = NowNs();
  server->Stop();
  EXPECT_LT(NowNs() - t0, 20'000'000'000u) << "polling threads must see the stop flag";
}

// The scheduler state letter ('R' running or runnable, 'S' asleep, ...) of each of this process's
// threads whose name starts with `prefix`, by name.
std::map<std::string, char> ThreadStates(const std::string& prefix) {
  std::map<std::string, char> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind(prefix, 0) != 0) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');  // "tid (comm) S ..."
    if (close != std::string::npos && close + 2 < line.size()) out[name] = line[close + 2];
  }
  return out;
}

// How often the thread of this process named `name` gave up its CPU to sleep
// (voluntary_ctxt_switches in /proc/self/task/<tid>/status); 0 if there is no such thread.
uint64_t VoluntarySwitches(const std::string& name) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string line;
    std::getline(comm, line);
    if (line != name) continue;
    std::ifstream status(entry.path() / "status");
    while (std::getline(status, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stoull(line.substr(24));
    }
  }
  return 0;
}

TEST(Server, SpinBucketsKeepTheDispatcherAndTheMostUrgentWorkersAwakeOnly) {
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.levels = 2;
  o.backend.device_cpu = -2;
  o.poll_ns = 0;  // every other thread sleeps as soon as it is idle
  o.spin_buckets = 1;
  auto started = Server::Start(o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  auto server = std::move(started.value());
  bool noted = false;
  for (const auto& n : server->notes()) noted |= n.find("never sleep (spin buckets 1)") != std::string::npos;
  EXPECT_TRUE(noted) << "the notes say which threads never sleep";
  // The threads name themselves once they run, which on a busy machine can be a while after
  // Start() returns.
  for (int i = 0; i < 1000; ++i) {
    auto st = ThreadStates("paamd-");
    if (st.count("paamd-dispatch") && st.count("paamd-w0.0.0") && st.count("paamd-w0.1.0")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Idle: bucket 0's worker and the dispatcher stay on a CPU (running or runnable, 'R', in
  // every sample); bucket 1's worker sleeps, its timed wait returning every 100 ms and going
  // back to sleep. A sampled state would not tell the sleeper apart on a busy machine (it waits
  // for a CPU, 'R', after each return), so its voluntary context switches do: they grow.
  const uint64_t other_switches = VoluntarySwitches("paamd-w0.1.0");
  int urgent_asleep = 0;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto st = ThreadStates("paamd-");
    ASSERT_TRUE(st.count("paamd-dispatch") && st.count("paamd-w0.0.0") && st.count("paamd-w0.1.0"));
    urgent_asleep += (st["paamd-dispatch"] != 'R') + (st["paamd-w0.0.0"] != 'R');
  }
  EXPECT_EQ(urgent_asleep, 0) << "the dispatcher and bucket 0's worker must never sleep";
  bool other_slept = false;
  for (int i = 0; i < 1000 && !other_slept; ++i) {
    other_slept = VoluntarySwitches("paamd-w0.1.0") > other_switches;
    if (!other_slept) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(other_slept) << "bucket 1's worker keeps poll_ns 0: it sleeps when idle";
  // Both buckets still serve, and Stop() ends the spinning threads.
  for (uint32_t prio : {1u, 9u}) {
    auto c = Connect(*server, prio, {{"vector_add", 64, 64}});
    ASSERT_NE(c, nullptr);
    std::vector<float> out;
    ASSERT_TRUE(VectorAdd(*c, {1}, {2}, &out).ok());
    EXPECT_EQ(out, (std::vector<float>{3}));
  }
  const uint64_t t0 = NowNs();
  server->Stop();
  EXPECT_LT(NowNs() - t0, 20'000'000'000u) << "spinning threads must see the stop flag (else Stop() hangs)";
}

TEST(Server, SpinBucketsBeyondTheBucketsAreRefused) {
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.levels = 2;
  o.backend.device_cpu = -2;
  o.spin_buckets = 3;
  auto s = Server::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("spin buckets: 3"), std::string::npos) << s.status().ToString();
  o.spin_buckets = -1;
  EXPECT_FALSE(Server::Start(o).ok());
}

// The CPUs thread `tid` of this process may run on.
std::vector<int> AffinityOf(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(tid, sizeof(set), &set), 0) << std::strerror(errno);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(Server, ThreadCpusPinTheDispatcherAndLeaveTheCpuBackendsWorkersOnTheDeviceCore) {
  // thread_cpus = {0}: CPU 0 exists everywhere. The CPU backend pins its workers to the device
  // core (the last one), so only the dispatcher moves; the note says so. (On two cores an
  // unpinned dispatcher, kept off the device core, runs on {0} too: the next test, without a
  // device core, tells the two apart.)
  if (OnlineCpus() < 2) GTEST_SKIP() << "needs a device core beside CPU 0";
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  if (!CPU_ISSET(0, &mine) || !CPU_ISSET(OnlineCpus() - 1, &mine)) {
    GTEST_SKIP() << "this process may not run on CPU 0 and the last CPU";
  }
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.levels = 2;  // two workers, both to stay on the device core
  o.thread_cpus = {0};
  auto s = Server::Start(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Server& server = **s;
  auto c = Connect(server, 1, {{"vector_add", 64, 64}});
  ASSERT_NE(c, nullptr);
  std::vector<float> out;
  ASSERT_TRUE(VectorAdd(*c, {1}, {2}, &out).ok());
  EXPECT_EQ(out, (std::vector<float>{3}));

  const pid_t dispatcher = ThreadNamed("paamd-dispatch");
  ASSERT_NE(dispatcher, 0);
  EXPECT_EQ(AffinityOf(dispatcher), (std::vector<int>{0}));
  for (const char* name : {"paamd-w0.0.0", "paamd-w0.1.0"}) {
    const pid_t worker = ThreadNamed(name);
    ASSERT_NE(worker, 0) << "no thread named " << name;
    EXPECT_EQ(AffinityOf(worker), (std::vector<int>{OnlineCpus() - 1})) << name << " left its device core";
  }
  bool noted = false;
  for (const auto& n : server.notes()) noted = noted || n.find("stay on its device core") != std::string::npos;
  EXPECT_TRUE(noted) << "no note says that the cpu backend's workers were left where they were";
  c.reset();
  server.Stop();
}

TEST(Server, ThreadCpusPinWorkersRoundTheListWhenTheBackendDoesNot) {
  // Without a device core (device_cpu -2) the workers are paamd's to place: {0} pins the
  // dispatcher and, wrapping round the one-entry list, every worker to CPU 0.
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  if (!CPU_ISSET(0, &mine)) GTEST_SKIP() << "this process may not run on CPU 0";
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.levels = 2;
  o.backend.device_cpu = -2;
  o.thread_cpus = {0};
  auto s = Server::Start(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto c = Connect(**s, 1, {{"vector_add", 64, 64}});
  ASSERT_NE(c, nullptr);
  std::vector<float> out;
  ASSERT_TRUE(VectorAdd(*c, {1}, {2}, &out).ok());
  for (const char* name : {"paamd-dispatch", "paamd-w0.0.0", "paamd-w0.1.0"}) {
    const pid_t tid = ThreadNamed(name);
    ASSERT_NE(tid, 0) << "no thread named " << name;
    EXPECT_EQ(AffinityOf(tid), (std::vector<int>{0})) << name;
  }
  c.reset();
  (*s)->Stop();

  o.socket_path = TempSocket();
  o.thread_cpus = {0, -1};
  auto bad = Server::Start(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("-1"), std::string::npos) << bad.status().ToString();
}

// Order: the client hears that the server died while the server is still finishing the
// running kernel (Stop() returns only once its workers are done with it), not after.
TEST(Server, ClientGetsServerDiedWithinBoundedTime) {
  auto server = StartServer();
  auto c = Connect(*server, 1, {{"spin", 0, 8}}, WaitMode::kSuspend);
  uint64_t params[4] = {20'000'000'000, 0, 0, 0};  // 20 s of CPU time
  ASSERT_TRUE(c->Submit(0, 0, params).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t t0 = NowNs();
  std::atomic<uint64_t> stopped{0};
  std::thread stopper([&] {
    server->Stop();  // stops the running spin at its next preemption point (cancel.cc)
    stopped = NowNs();
  });
  Status st = c->Wait(0, nullptr);
  const uint64_t heard = NowNs();
  stopper.join();
  EXPECT_EQ(st.code(), Errc::kServerDied) << st.ToString();
  EXPECT_LT(heard - t0, 10'000'000'000u) << "the error must come long before the running 20 s kernel ends";
  EXPECT_LT(stopped.load() - t0, 10'000'000'000u) << "Stop waited for the running kernel";
}

TEST(Server, DeregistrationFreesTheClientAndTimeoutsKeepTheRequest) {
  auto server = StartServer();
  auto c = Connect(*server, 1, {{"spin", 0, 8}}, WaitMode::kHybrid);
  EXPECT_EQ(server->Stats().active_clients, 1u);
  uint64_t params[4] = {300'000'000, 0, 0, 0};  // far longer than the 1 ms wait below
  ASSERT_TRUE(c->Submit(0, 0, params).ok());
  EXPECT_EQ(c->Wait(0, nullptr, 1'000'000).code(), Errc::kTimeout);
  EXPECT_TRUE(c->Wait(0, nullptr).ok()) << "a timed-out request can still be collected";
  c->Close();
  for (int i = 0; i < 2000 && server->Stats().active_clients != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(server->Stats().active_clients, 0u);
  EXPECT_EQ(server->Stats().clients_reaped, 0u) << "an orderly deregistration is not a reap";
}

// Whether addr lies in a mapping of a server region (a memfd named paam-region-<kernel>).
bool InRegionMapping(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) {
      return line.find("paam-region") != std::string::npos;
    }
  }
  return false;
}

TEST(Server, DeregisterKeepsTheRegionsMappedUntilCloseOrDestruction) {
  // Bindings hand out views of Input(k)/Output(k) that may outlive the registration (Python's
  // numpy arrays): after Deregister() the server has let the client go and requests get
  // kClosed, but the views stay memory until Close() or the destructor unmaps them.
  auto server = StartServer();
  for (const bool destroy : {false, true}) {
    auto c = Connect(*server, 1, {{"vector_add", 4096, 4096}});
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(server->Stats().active_clients, 1u);
    std::vector<float> out;
    ASSERT_TRUE(VectorAdd(*c, {1, 2}, {10, 20}, &out).ok());
    const std::span<uint8_t> in = c->Input(0);
    const std::span<const uint8_t> result = c->Output(0);
    ASSERT_TRUE(InRegionMapping(in.data()));
    ASSERT_TRUE(InRegionMapping(result.data()));

    c->Deregister();
    for (int i = 0; i < 2000 && server->Stats().active_clients != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(server->Stats().active_clients, 0u);
    EXPECT_EQ(server->Stats().clients_reaped, 0u) << "an orderly deregistration is not a reap";
    ASSERT_TRUE(InRegionMapping(in.data()) && InRegionMapping(result.data())) << "unmapped by Deregister()";
    std::memset(in.data(), 0xab, in.size());
    EXPECT_EQ(in[in.size() - 1], 0xab);
    EXPECT_EQ(std::memcmp(result.data(), out.data(), 2 * sizeof(float)), 0) << "the last result is still readable";
    uint64_t params[4] = {2, 0, 0, 0};
    EXPECT_EQ(c->Call(0, 16, params, nullptr).code(), Errc::kClosed);
    EXPECT_EQ(c->Submit(0, 16, params).code(), Errc::kClosed);
    EXPECT_EQ(c->Wait(0, nullptr).code(), Errc::kClosed);
    EXPECT_TRUE(c->Input(0).empty());
    EXPECT_TRUE(c->Output(0).empty());
    EXPECT_FALSE(c->Outstanding(0));
    c->Deregister();  // idempotent
    EXPECT_TRUE(InRegionMapping(in.data()));

    if (destroy) {
      c.reset();
    } else {
      c->Close();
    }
    EXPECT_FALSE(InRegionMapping(in.data())) << (destroy ? "the destructor" : "Close()") << " left the region mapped";
    EXPECT_FALSE(InRegionMapping(result.data()));
    if (c) c->Close();  // idempotent
  }
  EXPECT_EQ(server->Stats().clients_reaped, 0u);
}

// A direct-mode client's options: vector_add on the CPU device, no server (nobody listens on
// the socket: direct mode must not care).
ClientOptions DirectOptions() {
  ClientOptions o;
  o.socket_path = TempSocket();
  o.direct = true;
  o.direct_device_cpu = -2;
  o.kernels = {{"vector_add", 64, 64}};
  return o;
}

TEST(Server, DirectModeDeregisterKeepsTheRegionsUntilClose) {
  auto c = Client::Connect(DirectOptions());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> out;
  ASSERT_TRUE(VectorAdd(**c, {1, 2}, {10, 20}, &out).ok());
  const std::span<uint8_t> in = (*c)->Input(0);
  (*c)->Deregister();
  EXPECT_EQ((*c)->KernelCount(), 1) << "the regions go with Close(), not before";
  std::memset(in.data(), 0xab, in.size());  // still allocated (a use after free only ASan would report)
  EXPECT_EQ(in[0], 0xab);
  uint64_t params[4] = {2, 0, 0, 0};
  EXPECT_EQ((*c)->Call(0, 16, params, nullptr).code(), Errc::kClosed);
  EXPECT_TRUE((*c)->Input(0).empty());
  (*c)->Close();
  EXPECT_EQ((*c)->KernelCount(), 0);
}

TEST(Server, DirectModeRunsTheSameKernelsWithoutAServer) {
  ClientOptions o = DirectOptions();
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> out;
  ASSERT_TRUE(VectorAdd(**c, {1, 2}, {10, 20}, &out).ok());
  EXPECT_EQ(out, (std::vector<float>{11, 22}));
  o.kernels = {{"nope", 1, 1}};
  EXPECT_EQ(Client::Connect(o).status().code(), Errc::kUnknownKernel);
}

TEST(CApi, ConnectCallAndErrors) {
  auto server = StartServer();
  std::string path = server->socket_path();
  const char* names[] = {"reduction"};
  uint64_t in[] = {64}, out[] = {8};
  paam_client_options o{path.c_str(), "c-test", 4, 1, names, in, out, PAAM_WAIT_SPIN, 0};
  paam_client* c = nullptr;
  char err[256];
  ASSERT_EQ(paam_client_connect(&o, &c, err, sizeof(err)), 0) << err;
  int k = paam_client_kernel_index(c, "reduction");
  ASSERT_EQ(k, 0);
  uint64_t cap = 0;
  auto* x = static_cast<float*>(paam_client_input(c, k, &cap));
  ASSERT_EQ(cap, 64u);
  for (int i = 0; i < 4; ++i) x[i] = float(i + 1);
  uint64_t params[4] = {4, 0, 0, 0}, out_bytes = 0;
  ASSERT_EQ(paam_client_call(c, k, 16, params, &out_bytes, 0, err, sizeof(err)), 0) << err;
  float sum;
  std::memcpy(&sum, paam_client_output(c, k, nullptr), 4);
  EXPECT_EQ(sum, 10.0f);
  EXPECT_EQ(paam_client_call(c, k, 1000, params, &out_bytes, 0, err, sizeof(err)),
            static_cast<int>(Errc::kInputTooLarge));
  EXPECT_STREQ(paam_error_name(static_cast<int>(Errc::kInputTooLarge)), "input_too_large");
  paam_client_close(c);
}


// --- Device data (CUDA IPC) on a server without it: everything is refused, with a reason ---

DeviceBuffers SomeDeviceBuffers() {
  DeviceBuffers d;
  d.input_handle.fill(0xab);
  d.output_handle.fill(0xcd);
  d.input_bytes = 64;
  d.output_bytes = 64;
  d.gpu = 0;
  return d;
}

// Registers raw (no Client), publishes one descriptor with `flags` and returns the completion.
struct RawCompletion {
  uint32_t state = 0;
  Errc status = Errc::kOk;
  std::string error;
};
RawCompletion RawRequestWithFlags(const Server& server, uint32_t flags, uint64_t input_bytes = 8) {
  RawCompletion out;
  RawRegistration raw = RawRegister(server, 3);
  if (!raw.ok) return out;
  const wire::RegisterReply* reply = &raw.reply;
  std::vector<UniqueFd>& fds = raw.fds;
  auto db = Mapping::Map(fds[0].get(), reply->doorbell_bytes, /*writable=*/false);
  auto ch = Mapping::Map(fds[2].get(), reply->channel_bytes);
  auto rg = Mapping::Map(fds[3].get(), reply->regions[0].mapping_bytes);
  EXPECT_TRUE(db.ok() && ch.ok() && rg.ok());
  if (!db.ok() || !ch.ok() || !rg.ok()) return out;
  auto* h = rg->as<shm::RegionHeader>();
  auto* in = reinterpret_cast<float*>(static_cast<uint8_t*>(rg->data()) + h->input_offset);
  in[0] = 1;
  in[1] = 2;
  shm::RequestDescriptor d{};
  d.region = 0;
  d.flags = flags;
  d.sequence = 1;
  d.input_bytes = input_bytes;
  d.params[0] = 1;
  d.submit_ns = NowNs();
  h->state.store(shm::kPending);
  auto* channel = ch->as<shm::ChannelHeader>();
  std::memcpy(&channel->slots[0], &d, sizeof(d));
  channel->head.store(1, std::memory_order_release);
  // Wake the dispatcher the way the client library does: through the wake eventfd, if it sleeps.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (db->as<const shm::DoorbellHeader>()->sleeping.load() != 0) {
    const uint64_t one = 1;
    EXPECT_EQ(write(fds[1].get(), &one, sizeof(one)), 8);
  }
  for (int i = 0; i < 10000 && h->state.load() == shm::kPending; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  out.state = h->state.load();
  out.status = static_cast<Errc>(h->status);
  out.error = h->error;
  return out;
}

// A client that bypasses the library's own size check (raw descriptor) still meets the
// server's: the size declared at registration (64 bytes here) is the server's private record.
TEST(Server, OversizeDescriptorIsRefusedByTheServerItself) {
  auto server = StartServer();
  RawCompletion c = RawRequestWithFlags(*server, 0, /*input_bytes=*/1000);
  EXPECT_EQ(c.state, shm::kFailed);
  EXPECT_EQ(c.status, Errc::kInputTooLarge);
  EXPECT_NE(c.error.find("input of 1000 bytes exceeds the size of 64 declared for 'vector_add'"), std::string::npos)
      << c.error;
  EXPECT_EQ(RawRequestWithFlags(*server, 0).state, shm::kDone) << "and the server keeps serving";
}

TEST(DeviceData, FlagIsRefusedForARegionRegisteredWithoutDeviceBuffers) {
  auto server = StartServer();
  RawCompletion c = RawRequestWithFlags(*server, shm::kFlagDeviceData);
  EXPECT_EQ(c.state, shm::kFailed);
  EXPECT_EQ(c.status, Errc::kInvalidArgument);
  EXPECT_NE(c.error.find("no device buffers"), std::string::npos) << c.error;
  RawCompletion host = RawRequestWithFlags(*server, 0);
  EXPECT_EQ(host.state, shm::kDone) << "the same request on host data is served: " << host.error;
  RawCompletion unknown = RawRequestWithFlags(*server, 0x4);
  EXPECT_EQ(unknown.state, shm::kFailed);
  EXPECT_EQ(unknown.status, Errc::kProtocolError) << "unknown flag bits are a protocol error";
  // The client library refuses before anything is sent.
  auto client = Connect(*server, 1, {{"vector_add", 64, 64}});
  ASSERT_NE(client, nullptr);
  EXPECT_FALSE(client->HasDeviceBuffers(0));
  uint64_t params[4] = {1, 0, 0, 0};
  EXPECT_EQ(client->SubmitDevice(0, 8, params).code(), Errc::kInvalidArgument);
  std::vector<float> out;
  EXPECT_TRUE(VectorAdd(*client, {1}, {2}, &out).ok()) << "the refused submit left nothing outstanding";
}

TEST(DeviceData, CpuServerRefusesRegistrationsWithDeviceBuffers) {
  auto server = StartServer();
  ClientOptions o;
  o.socket_path = server->socket_path();
  o.kernels = {{"vector_add", 64, 64, SomeDeviceBuffers()}};
  auto c = Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(c.status().message().find("--backend cuda"), std::string::npos) << c.status().message();
  EXPECT_EQ(server->Stats().active_clients, 0u);
  auto ok = Connect(*server, 1, {{"vector_add", 64, 64}});
  EXPECT_NE(ok, nullptr) << "the server keeps serving";
}

TEST(DeviceData, CpuBackendRefusesRegionsWithIpcHandles) {
  BackendOptions bo;
  bo.device_cpu = -2;
  CpuBackend backend(bo, /*direct=*/false);
  std::vector<uint8_t> area(128);
  RegionMemory m;
  m.input = area.data();
  m.input_capacity = 64;
  m.output = area.data() + 64;
  m.output_capacity = 64;
  EXPECT_TRUE(backend.AttachRegion(&m).ok()) << "host regions are fine";
  m.device = SomeDeviceBuffers();
  Status st = backend.AttachRegion(&m);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_NE(st.message().find("cuda backend"), std::string::npos) << st.message();
  EXPECT_EQ(backend.UnitOfDevice(0), -1);
}

TEST(DeviceData, DirectModeRefusesDeviceBuffers) {
  ClientOptions o;
  o.direct = true;
  o.direct_device_cpu = -2;
  o.kernels = {{"vector_add", 64, 64, SomeDeviceBuffers()}};
  auto c = Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kInvalidArgument);
}

}  // namespace
}  // namespace paam
