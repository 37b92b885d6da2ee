// Cancellation: a request's time limit, the server's cap, a client that goes away, and the CPU
// backend's side of it (kernels stopping at their preemption points). Bounds are loose on
// purpose (a busy 2-core machine): "well before the 20 s the kernel would take".
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "backend/backend.h"
#include "common/clock.h"
#include "paam/client.h"
#include "server/descriptor_check.h"
#include "server/server.h"
#include "server/test_socket.h"
#include "shm/layout.h"

namespace paam {
namespace {

using test_util::TempSocket;
using namespace std::chrono_literals;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;

std::unique_ptr<Server> StartServer(uint64_t max_request_ms = 60'000, const std::string& socket = "") {
  ServerOptions o;
  o.socket_path = socket.empty() ? TempSocket() : socket;
  o.backend.levels = 1;       // one worker: a request that is not stopped holds up every other
  o.backend.device_cpu = -2;  // do not pin: tests run on small CI machines
  o.max_request_ms = max_request_ms;
  auto s = Server::Start(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s.value()) : nullptr;
}

std::unique_ptr<Client> Connect(const Server& server, uint32_t priority, uint64_t time_limit_ns = 0) {
  ClientOptions o;
  o.socket_path = server.socket_path();
  o.priority = priority;
  o.kernels = {{"spin", 0, 8}};
  o.request_time_limit_ns = time_limit_ns;
  auto c = Client::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c.value()) : nullptr;
}

// A spin of `ns` of CPU time.
const uint64_t* Spin(uint64_t ns) {
  thread_local uint64_t p[4];
  p[0] = ns;
  p[1] = p[2] = p[3] = 0;
  return p;
}

TEST(Cancel, ASpinPastItsTimeLimitIsStoppedAndAMoreUrgentRequestThenRunsPromptly) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto slow = Connect(*server, 1);
  auto urgent = Connect(*server, 100);
  ASSERT_TRUE(slow && urgent);
  const uint64_t t0 = NowNs();
  ASSERT_TRUE(slow->Submit(0, 0, Spin(20 * kSec), 200 * kMs).ok());
  std::this_thread::sleep_for(50ms);  // the spin holds the only worker; the urgent request queues
  const uint64_t t1 = NowNs();
  ASSERT_TRUE(urgent->Submit(0, 0, Spin(kMs)).ok());
  uint64_t out = 0;
  Status st = slow->Wait(0, &out);
  EXPECT_EQ(st.code(), Errc::kCancelled) << st.ToString();
  EXPECT_NE(st.message().find("time limit of 200.0 ms"), std::string::npos) << st.message();
  EXPECT_LT(NowNs() - t0, 10 * kSec) << "the 20 s spin was not stopped";
  const RequestTimestamps ts = slow->Timestamps(0);
  EXPECT_GT(ts.device_start, 0u) << "it ran before it was stopped";
  st = urgent->Wait(0, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_LT(NowNs() - t1, 5 * kSec);
  // The kernel is free again for the client that was cancelled.
  EXPECT_TRUE(slow->Call(0, 0, Spin(kMs), &out).ok());
}

TEST(Cancel, CallWithinGivesUpAndTheServerStopsTheRequest) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto c = Connect(*server, 1);
  ASSERT_NE(c, nullptr);
  const uint64_t t0 = NowNs();
  uint64_t out = 0;
  Status st = c->CallWithin(0, 0, Spin(20 * kSec), &out, 200 * kMs);
  // Whichever side noticed first: the server's answer, or this caller's own timeout, after
  // which the server's answer comes soon (the spin stops at its next preemption point).
  if (st.code() == Errc::kTimeout) st = c->Wait(0, &out);
  EXPECT_EQ(st.code(), Errc::kCancelled) << st.ToString();
  EXPECT_LT(NowNs() - t0, 10 * kSec);
}

TEST(Cancel, ClientOptionsGiveEveryRequestItsLimit) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto c = Connect(*server, 1, /*time_limit_ns=*/150 * kMs);
  ASSERT_NE(c, nullptr);
  uint64_t out = 0;
  const uint64_t t0 = NowNs();
  EXPECT_EQ(c->Call(0, 0, Spin(20 * kSec), &out).code(), Errc::kCancelled);
  EXPECT_LT(NowNs() - t0, 10 * kSec);
  EXPECT_TRUE(c->Call(0, 0, Spin(kMs), &out).ok()) << "a request within its limit completes";
  // A request's own limit replaces the client's: 0 is none (the server's cap remains).
  EXPECT_TRUE(c->Submit(0, 0, Spin(300 * kMs), 0).ok());
  EXPECT_TRUE(c->Wait(0, &out).ok());
}

TEST(Cancel, AQueuedRequestPastItsDeadlineIsAnsweredWithoutRunning) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto busy = Connect(*server, 1);
  auto late = Connect(*server, 100);
  ASSERT_TRUE(busy && late);
  ASSERT_TRUE(busy->Submit(0, 0, Spin(2 * kSec)).ok());
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(late->Submit(0, 0, Spin(kMs), 100 * kMs).ok());
  uint64_t out = 0;
  Status st = late->Wait(0, &out);
  EXPECT_EQ(st.code(), Errc::kCancelled) << st.ToString();
  EXPECT_NE(st.message().find("did not run"), std::string::npos) << st.message();
  const RequestTimestamps lt = late->Timestamps(0);
  EXPECT_EQ(lt.picked, 0u) << "no worker took it";
  EXPECT_EQ(lt.device_start, 0u) << "it never ran";
  ASSERT_TRUE(busy->Wait(0, &out).ok()) << "the request that had no limit ran to its end";
  EXPECT_LT(lt.completed, busy->Timestamps(0).device_end) << "answered while the other one still ran";
}

TEST(Cancel, TheServersCapStopsARequestWithoutALimitOfItsOwn) {
  auto server = StartServer(/*max_request_ms=*/300);
  ASSERT_NE(server, nullptr);
  auto c = Connect(*server, 1);
  ASSERT_NE(c, nullptr);
  const uint64_t t0 = NowNs();
  uint64_t out = 0;
  Status st = c->Call(0, 0, Spin(20 * kSec), &out);
  EXPECT_EQ(st.code(), Errc::kCancelled) << st.ToString();
  EXPECT_NE(st.message().find("the server's cap on a request's length of 300.0 ms"), std::string::npos)
      << st.message();
  EXPECT_LT(NowNs() - t0, 10 * kSec);
  // A client's longer limit does not lift the cap.
  ASSERT_TRUE(c->Submit(0, 0, Spin(20 * kSec), 10 * kSec).ok());
  EXPECT_EQ(c->Wait(0, &out).code(), Errc::kCancelled);
  EXPECT_LT(NowNs() - t0, 20 * kSec);
  EXPECT_TRUE(c->Call(0, 0, Spin(kMs), &out).ok());
}

TEST(Cancel, AKilledClientsRunningSpinIsStoppedAndTheWorkerFreed) {
  // The child is forked while this process has no other threads (the server starts after).
  const std::string socket = TempSocket();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    for (int i = 0; i < 500 && access(socket.c_str(), F_OK) != 0; ++i) usleep(10'000);
    ClientOptions o;
    o.socket_path = socket;
    o.priority = 1;
    o.kernels = {{"spin", 0, 8}};
    auto c = Client::Connect(o);
    if (!c.ok() || !(*c)->Submit(0, 0, Spin(20 * kSec)).ok()) _exit(1);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  auto server = StartServer(60'000, socket);
  ASSERT_NE(server, nullptr);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the child could not submit its spin";
  close(ready[0]);
  std::this_thread::sleep_for(300ms);  // the spin is running
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  const uint64_t t0 = NowNs();
  auto next = Connect(*server, 1);
  ASSERT_NE(next, nullptr);
  uint64_t out = 0;
  EXPECT_TRUE(next->Call(0, 0, Spin(kMs), &out).ok());
  EXPECT_LT(NowNs() - t0, 5 * kSec) << "the dead client's spin kept the worker";
}

TEST(Cancel, ADeregisteredClientsRunningSpinIsStopped) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto gone = Connect(*server, 1);
  auto next = Connect(*server, 1);
  ASSERT_TRUE(gone && next);
  ASSERT_TRUE(gone->Submit(0, 0, Spin(20 * kSec)).ok());
  std::this_thread::sleep_for(300ms);
  gone->Close();  // its request is abandoned; the server stops it
  const uint64_t t0 = NowNs();
  uint64_t out = 0;
  EXPECT_TRUE(next->Call(0, 0, Spin(kMs), &out).ok());
  EXPECT_LT(NowNs() - t0, 5 * kSec);
}

TEST(Cancel, StoppingTheServerStopsTheRunningSpin) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto c = Connect(*server, 1);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Submit(0, 0, Spin(20 * kSec)).ok());
  std::this_thread::sleep_for(200ms);
  const uint64_t t0 = NowNs();
  server->Stop();
  EXPECT_LT(NowNs() - t0, 10 * kSec) << "Stop waited for the spin";
  uint64_t out = 0;
  EXPECT_EQ(c->Wait(0, &out).code(), Errc::kServerDied) << "a stopped server answers nothing";
}

TEST(Cancel, ServerRefusesAZeroCap) {
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.device_cpu = -2;
  o.max_request_ms = 0;
  auto s = Server::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Errc::kInvalidArgument);
}

TEST(RequestDeadline, TheShorterOfTheClientsLimitAndTheCapFromAClampedSubmission) {
  shm::RequestDescriptor d{};
  d.submit_ns = 1000;
  EXPECT_EQ(RequestDeadline(d, 2000, 0), UINT64_MAX) << "no limit, no cap";
  EXPECT_EQ(RequestDeadline(d, 2000, 500), 1500u) << "the cap, from the submission";
  d.time_limit_ns = 200;
  EXPECT_EQ(RequestDeadline(d, 2000, 500), 1200u) << "a shorter client limit";
  EXPECT_EQ(RequestDeadline(d, 2000, 0), 1200u);
  d.time_limit_ns = 900;
  EXPECT_EQ(RequestDeadline(d, 2000, 500), 1500u) << "a longer client limit does not lift the cap";
  d.submit_ns = UINT64_MAX - 10;  // dated in the future: counted from the dequeue
  EXPECT_EQ(RequestDeadline(d, 2000, 500), 2500u);
  EXPECT_EQ(RequestDeadline(d, UINT64_MAX - 5, 500), UINT64_MAX) << "saturates";
}

// The CPU backend alone: a kernel stops at its preemption point once its word holds its ticket.
TEST(CpuBackendCancel, ASpinStopsAtItsNextPreemptionPointOnlyForItsOwnTicket) {
  KernelRegistry registry = KernelRegistry::WithBuiltins();
  BackendOptions o;
  o.device_cpu = -2;
  o.levels = 2;
  auto made = CreateBackend(o, &registry);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Backend* b = made->get();
  uint64_t out = 0;
  RegionMemory region;
  region.output = &out;
  region.output_capacity = sizeof(out);
  std::atomic<uint64_t> word{0};
  auto run = [&](uint64_t ns, uint64_t ticket, int level) {
    KernelCall call;
    call.kernel = registry.Find("spin");
    call.region = &region;
    call.output_bytes = sizeof(out);
    call.params[0] = ns;
    call.cancel = &word;
    call.ticket = ticket;
    DeviceTimes t;
    return b->Run(call, level, 0, &t);
  };
  for (int level : {0, 1}) {
    word = 0;
    Status st;
    const uint64_t t0 = NowNs();
    std::thread t([&] { st = run(20 * kSec, 7, level); });
    std::this_thread::sleep_for(100ms);
    word = 7;
    b->CancelRaised();
    t.join();
    EXPECT_EQ(st.code(), Errc::kCancelled) << "level " << level << ": " << st.ToString();
    EXPECT_LT(NowNs() - t0, 10 * kSec);
    word = 6;  // another request's ticket
    EXPECT_TRUE(run(20 * kMs, 7, level).ok()) << "level " << level;
  }
}

TEST(CpuBackendCancel, AMatmulStopsBetweenItsRowBands) {
  KernelRegistry registry = KernelRegistry::WithBuiltins();
  BackendOptions o;
  o.device_cpu = -2;
  auto made = CreateBackend(o, &registry);
  ASSERT_TRUE(made.ok());
  const uint64_t n = 64;
  std::vector<float> in(2 * n * n, 1.0f), out(n * n, 0.0f);
  RegionMemory region;
  region.input = in.data();
  region.input_capacity = in.size() * 4;
  region.output = out.data();
  region.output_capacity = out.size() * 4;
  std::atomic<uint64_t> word{3};
  KernelCall call;
  call.kernel = registry.Find("matmul");
  call.region = &region;
  call.input_bytes = in.size() * 4;
  call.output_bytes = out.size() * 4;
  call.params[0] = call.params[1] = call.params[2] = n;
  call.cancel = &word;
  call.ticket = 3;  // raised before it starts: it stops at its first band
  DeviceTimes t;
  EXPECT_EQ((*made)->Run(call, 0, 0, &t).code(), Errc::kCancelled);
  call.ticket = 4;
  ASSERT_TRUE((*made)->Run(call, 0, 0, &t).ok());
  EXPECT_EQ(out[0], static_cast<float>(n));
}

// A kernel parked at its preemption point behind a more urgent one stops when cancelled.
int PlanHold(const uint64_t*, uint64_t, uint64_t* out, char*, size_t) {
  *out = 0;
  return PAAM_KERNEL_OK;
}
std::atomic<bool> g_hold_started{false}, g_hold_release{false};
int RunHold(const paam_kernel_args*) {
  g_hold_started = true;
  while (!g_hold_release.load()) std::this_thread::sleep_for(1ms);
  return PAAM_KERNEL_OK;
}

TEST(CpuBackendCancel, AParkedSpinStopsWhenCancelled) {
  KernelRegistry registry = KernelRegistry::WithBuiltins();
  ASSERT_TRUE(registry.Add({"hold", "() -> u8[0]", PlanHold, RunHold, nullptr}).ok());
  BackendOptions o;
  o.device_cpu = -2;
  o.levels = 2;
  auto made = CreateBackend(o, &registry);
  ASSERT_TRUE(made.ok());
  Backend* b = made->get();
  RegionMemory region;
  uint64_t out = 0;
  region.output = &out;
  region.output_capacity = sizeof(out);
  g_hold_started = false;
  g_hold_release = false;
  std::thread urgent([&] {
    KernelCall call;
    call.kernel = registry.Find("hold");
    call.region = &region;
    DeviceTimes t;
    EXPECT_TRUE(b->Run(call, 0, 0, &t).ok());
  });
  while (!g_hold_started.load()) std::this_thread::sleep_for(1ms);
  std::atomic<uint64_t> word{0};
  Status st;
  std::thread parked([&] {
    KernelCall call;
    call.kernel = registry.Find("spin");
    call.region = &region;
    call.output_bytes = sizeof(out);
    call.params[0] = 20 * kSec;
    call.cancel = &word;
    call.ticket = 9;
    DeviceTimes t;
    st = b->Run(call, 1, 0, &t);
  });
  std::this_thread::sleep_for(100ms);  // parked behind the level-0 kernel
  word = 9;
  b->CancelRaised();
  parked.join();
  EXPECT_EQ(st.code(), Errc::kCancelled) << st.ToString();
  g_hold_release = true;
  urgent.join();
}

}  // namespace
}  // namespace paam
