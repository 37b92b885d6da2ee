// Kernel results checked against straightforward references, and the plugin C ABI.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu_backend.h"
#include "kernels/registry.h"

namespace paam {
namespace {

TEST(BackendOptions, ResolveCudaWaitNapsInPaamdAndSpinsInDirectModeUnlessTold) {
  BackendOptions server, direct;
  direct.direct = true;
  EXPECT_EQ(ResolveCudaWait(server, nullptr)->kind, CudaWait::Kind::kNap);
  EXPECT_EQ(ResolveCudaWait(server, nullptr)->nap_us, CudaWait::kDefaultNapUs);
  EXPECT_EQ(ResolveCudaWait(direct, nullptr)->kind, CudaWait::Kind::kSpin);
  // $PAAM_CUDA_WAIT over the default, the option over both
  EXPECT_EQ(ResolveCudaWait(server, "block")->kind, CudaWait::Kind::kBlock);
  EXPECT_EQ(ResolveCudaWait(direct, "nap:200")->nap_us, 200);
  direct.cuda_wait = "poll";
  EXPECT_EQ(ResolveCudaWait(direct, "block")->kind, CudaWait::Kind::kPoll);
  // a bad value says where it came from
  auto bad_env = ResolveCudaWait(server, "sleepy");
  ASSERT_FALSE(bad_env.ok());
  EXPECT_EQ(bad_env.status().message().rfind("PAAM_CUDA_WAIT: ", 0), 0u) << bad_env.status().message();
  server.cuda_wait = "sleepy";
  auto bad_option = ResolveCudaWait(server, "spin");
  ASSERT_FALSE(bad_option.ok());
  EXPECT_EQ(bad_option.status().message().find("PAAM_CUDA_WAIT"), std::string::npos);
}

TEST(BackendOptions, ParseCudaWaitTakesEveryFormAndQuotesABadOne) {
  const std::pair<const char*, CudaWait::Kind> kinds[] = {
      {"spin", CudaWait::Kind::kSpin}, {"poll", CudaWait::Kind::kPoll}, {"block", CudaWait::Kind::kBlock}};
  for (const auto& [text, kind] : kinds) {
    auto w = ParseCudaWait(text);
    ASSERT_TRUE(w.ok()) << text;
    EXPECT_EQ(w->kind, kind) << text;
    EXPECT_EQ(w->nap_us, 0);
  }
  auto nap = ParseCudaWait("nap");
  ASSERT_TRUE(nap.ok());
  EXPECT_EQ(nap->kind, CudaWait::Kind::kNap);
  EXPECT_EQ(nap->nap_us, CudaWait::kDefaultNapUs);
  auto nap200 = ParseCudaWait("nap:200");
  ASSERT_TRUE(nap200.ok());
  EXPECT_EQ(nap200->kind, CudaWait::Kind::kNap);
  EXPECT_EQ(nap200->nap_us, 200);
  EXPECT_EQ(ParseCudaWait("nap:1")->nap_us, 1);
  EXPECT_EQ(ParseCudaWait("nap:10000")->nap_us, 10000);
  for (const char* bad : {"", "Spin", "sleepy", "nap:", "nap:0", "nap:05", "nap:10001", "nap:-5", "nap:5us", "nap:1.5",
                          "nap200", "spin:5"}) {
    auto w = ParseCudaWait(bad);
    ASSERT_FALSE(w.ok()) << "'" << bad << "'";
    EXPECT_EQ(w.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(w.status().message().find("'" + std::string(bad) + "'"), std::string::npos) << w.status().message();
  }
}

// Runs `name` on `input` at `level`/`lane` of `backend`, on the calling thread; the output bytes.
Result<std::vector<uint8_t>> RunKernel(Backend* backend, const KernelRegistry& registry, const std::string& name,
                                       std::vector<uint8_t> input, std::vector<uint64_t> params, int level = 0,
                                       int lane = 0) {
  const KernelEntry* k = registry.Find(name);
  if (k == nullptr) return Status(Errc::kUnknownKernel, name);
  KernelCall call;
  call.kernel = k;
  for (size_t i = 0; i < params.size(); ++i) call.params[i] = params[i];
  call.input_bytes = input.size();
  Status st = k->Plan(call.params, call.input_bytes, &call.output_bytes);
  if (!st.ok()) return st;
  std::vector<uint8_t> out(call.output_bytes, 0xAB);
  RegionMemory mem;
  mem.input = input.data();
  mem.input_capacity = input.size();
  mem.output = out.data();
  mem.output_capacity = out.size();
  call.region = &mem;
  DeviceTimes t;
  st = backend->Run(call, level, lane, &t);
  if (!st.ok()) return st;
  EXPECT_LE(t.start_ns, t.end_ns);
  return out;
}

struct Harness {
  KernelRegistry registry = KernelRegistry::WithBuiltins();
  std::unique_ptr<Backend> backend;
  Harness() {
    BackendOptions o;
    o.device_cpu = -2;
    auto b = CreateBackend(o, &registry);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    backend = std::move(b.value());
  }
  // Runs `name` on `input` and returns the output bytes.
  Result<std::vector<uint8_t>> Run(const std::string& name, std::vector<uint8_t> input, std::vector<uint64_t> params) {
    return RunKernel(backend.get(), registry, name, std::move(input), std::move(params));
  }
};

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> As(const std::vector<uint8_t>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

TEST(Kernels, VectorAddMatchesReference) {
  Harness h;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-10, 10);
  const size_t n = 1000;
  std::vector<float> in(2 * n);
  for (auto& x : in) x = d(rng);
  auto out = h.Run("vector_add", Bytes(in), {n});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto c = As<float>(*out);
  ASSERT_EQ(c.size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(c[i], in[i] + in[n + i]);
}

TEST(Kernels, MatmulMatchesReference) {
  Harness h;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-1, 1);
  const size_t m = 7, k = 5, n = 3;
  std::vector<float> in(m * k + k * n);
  for (auto& x : in) x = d(rng);
  auto out = h.Run("matmul", Bytes(in), {m, k, n});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto c = As<float>(*out);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double ref = 0;
      for (size_t q = 0; q < k; ++q) ref += double(in[i * k + q]) * in[m * k + q * n + j];
      EXPECT_NEAR(c[i * n + j], ref, 1e-5);
    }
  }
}

TEST(Kernels, ReductionAndHistogramMatchReference) {
  Harness h;
  std::vector<float> x = {1.5f, 2.5f, -1.0f, 4.0f};
  auto sum = h.Run("reduction", Bytes(x), {4});
  ASSERT_TRUE(sum.ok());
  EXPECT_FLOAT_EQ(As<float>(*sum)[0], 7.0f);

  std::vector<uint8_t> data = {0, 1, 1, 255, 255, 255, 7};
  auto hist = h.Run("histogram", data, {data.size()});
  ASSERT_TRUE(hist.ok());
  auto counts = As<uint32_t>(*hist);
  ASSERT_EQ(counts.size(), 256u);
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(counts[1], 2u);
  EXPECT_EQ(counts[7], 1u);
  EXPECT_EQ(counts[255], 3u);
  EXPECT_EQ(counts[2], 0u);
}

TEST(Kernels, SpinOccupiesTheDeviceForItsDuration) {
  Harness h;
  auto out = h.Run("spin", {}, {3'000'000});
  ASSERT_TRUE(out.ok());
  EXPECT_GE(As<uint64_t>(*out)[0], 3'000'000u);
  // a GPU width (percent of its block slots) is accepted and means nothing on a CPU core
  auto narrow = h.Run("spin", {}, {1'000'000, 0, 50});
  ASSERT_TRUE(narrow.ok()) << narrow.status().ToString();
  EXPECT_GE(As<uint64_t>(*narrow)[0], 1'000'000u);
  auto wide = h.Run("spin", {}, {1'000'000, 0, 101});
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("width"), std::string::npos) << wide.status().ToString();
}

// A kernel that holds the device until released: a more urgent level's work in progress.
std::atomic<bool> g_hold_started{false};
std::atomic<bool> g_hold_release{false};
int PlanHold(const uint64_t*, uint64_t, uint64_t* out, char*, size_t) {
  *out = 0;
  return PAAM_KERNEL_OK;
}
int RunHold(const paam_kernel_args*) {
  g_hold_started = true;
  while (!g_hold_release.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  return PAAM_KERNEL_OK;
}

// `name` with one parameter and no input at `level`/`lane`: whether it ran.
bool RunAt(Backend* backend, const KernelRegistry& registry, const char* name, uint64_t param, int level,
           int lane = 0) {
  return RunKernel(backend, registry, name, {}, {param}, level, lane).ok();
}

TEST(Kernels, ALessUrgentSpinWaitsAtItsPreemptionPointsWhileAMoreUrgentKernelRuns) {
  // No pinning and no OS priorities: the threads run on different cores at once, so only the
  // preemption points can hold the level-1 spin back (on one core, Linux's fair server would
  // otherwise run a starved nice-19 best-effort worker ahead of the SCHED_FIFO ones).
  KernelRegistry registry = KernelRegistry::WithBuiltins();
  ASSERT_TRUE(registry.Add({"hold", "() -> u8[0]", PlanHold, RunHold, nullptr}).ok());
  BackendOptions o;
  o.device_cpu = -2;
  o.levels = 3;
  o.best_effort_lanes = 2;
  auto made = CreateBackend(o, &registry);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Backend* b = made->get();
  g_hold_started = false;
  g_hold_release = false;
  std::thread urgent([&] { EXPECT_TRUE(RunAt(b, registry, "hold", 0, /*level=*/0)); });
  while (!g_hold_started.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  std::atomic<int> done{0};
  std::thread be0([&] { EXPECT_TRUE(RunAt(b, registry, "spin", 2'000'000, 2, 0)); ++done; });
  std::thread be1([&] { EXPECT_TRUE(RunAt(b, registry, "spin", 2'000'000, 2, 1)); ++done; });
  std::thread mid([&] { EXPECT_TRUE(RunAt(b, registry, "spin", 2'000'000, 1)); ++done; });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // 75 times their 2 ms
  EXPECT_EQ(done.load(), 0) << "a 2 ms spin below a running level-0 kernel finished";
  g_hold_release = true;
  urgent.join();
  be0.join();
  be1.join();
  mid.join();
  EXPECT_EQ(done.load(), 3);
  // A more urgent spin never waits for a less urgent kernel, and lanes of one level not for
  // each other.
  g_hold_started = false;
  g_hold_release = false;
  std::thread low([&] { EXPECT_TRUE(RunAt(b, registry, "hold", 0, 2, 0)); });
  while (!g_hold_started.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  EXPECT_TRUE(RunAt(b, registry, "spin", 2'000'000, 0));
  EXPECT_TRUE(RunAt(b, registry, "spin", 2'000'000, 1));
  EXPECT_TRUE(RunAt(b, registry, "spin", 2'000'000, 2, 1));
  g_hold_release = true;
  low.join();
}

TEST(Kernels, ALessUrgentSpinAlsoWaitsWhileMoreUrgentRequestsWaitInTheServersQueue) {
  KernelRegistry registry = KernelRegistry::WithBuiltins();
  BackendOptions o;
  o.device_cpu = -2;
  o.levels = 2;
  auto made = CreateBackend(o, &registry);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Backend* b = made->get();
  std::atomic<uint32_t> waiting_at_0{1};
  b->SetQueueDepth([&](int unit, int level) { return unit == 0 && level == 0 ? waiting_at_0.load() : 0u; });
  std::atomic<bool> done{false};
  std::thread low([&] { EXPECT_TRUE(RunAt(b, registry, "spin", 2'000'000, 1)); done = true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load()) << "a 2 ms level-1 spin finished while a level-0 request waited";
  EXPECT_TRUE(RunAt(b, registry, "spin", 1'000'000, 0));  // level 0 itself never waits
  waiting_at_0 = 0;  // taken (or dropped unrun): the spin goes on without a kernel ending
  low.join();
  EXPECT_TRUE(done.load());
}

// What PrepareWorker gives each level's worker under `realtime`: SCHED_FIFO above the fair
// levels (or a note saying why not), SCHED_OTHER on the nice ladder for the lowest `fair_levels`.
struct WorkerSched {
  int policy = -1;
  int nice = 0;
  int fifo_priority = 0;
  std::string note;
};

std::vector<WorkerSched> PrepareEveryLevel(int levels, int fair_levels) {
  BackendOptions o;
  o.device_cpu = -2;
  o.levels = levels;
  o.realtime = true;
  o.rt_priority_base = 10;
  o.fair_levels = fair_levels;
  CpuBackend backend(o, /*direct=*/false);
  std::vector<WorkerSched> out(static_cast<size_t>(levels));
  for (int level = 0; level < levels; ++level) {
    std::thread([&, level] {  // a fresh thread per level: the settings stay with it
      WorkerSched& w = out[static_cast<size_t>(level)];
      EXPECT_TRUE(backend.PrepareWorker(0, level, 0, &w.note).ok());
      w.policy = sched_getscheduler(0);
      w.nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
      sched_param p{};
      if (sched_getparam(0, &p) == 0) w.fifo_priority = p.sched_priority;
    }).join();
  }
  return out;
}

TEST(CpuBackend, TheLowestFairLevelsStayOnTheNiceLadderUnderRealtime) {
  struct Case {
    int levels, fair_levels, resolved;
  };
  // -1: the default (the lowest level alone when there are several); more than the levels: all.
  for (const Case c : {Case{4, -1, 1}, Case{4, 2, 2}, Case{4, 0, 0}, Case{4, 9, 4}, Case{1, -1, 0}}) {
    SCOPED_TRACE("levels " + std::to_string(c.levels) + ", fair_levels " + std::to_string(c.fair_levels));
    BackendOptions o;
    o.levels = c.levels;
    o.fair_levels = c.fair_levels;
    EXPECT_EQ(CpuBackend(o, false).FairLevels(), c.resolved);
    const std::vector<WorkerSched> got = PrepareEveryLevel(c.levels, c.fair_levels);
    for (int level = 0; level < c.levels; ++level) {
      const WorkerSched& w = got[static_cast<size_t>(level)];
      const int ladder = c.levels > 1 ? 19 * level / (c.levels - 1) : 0;
      if (level >= c.levels - c.resolved) {
        EXPECT_EQ(w.policy, SCHED_OTHER) << "level " << level;
        EXPECT_EQ(w.nice, ladder) << "level " << level;
      } else if (w.policy != SCHED_FIFO) {
        // Denied (no CAP_SYS_NICE, a container): the nice ladder instead, and a note says so.
        EXPECT_NE(w.note.find("using nice"), std::string::npos) << "level " << level << ": " << w.note;
        EXPECT_EQ(w.nice, ladder) << "level " << level;
      } else {
        EXPECT_EQ(w.fifo_priority, 10 + (c.levels - 1 - level)) << "level " << level;
      }
    }
  }
}

TEST(Kernels, PlanRejectsShapeMismatchWithAMessage) {
  Harness h;
  auto out = h.Run("vector_add", std::vector<uint8_t>(12), {2});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(out.status().message().find("2*n floats"), std::string::npos) << out.status().message();
}

TEST(Kernels, PluginLoadsThroughTheCAbi) {
  KernelRegistry r = KernelRegistry::WithBuiltins();
  Status st = r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_PATH);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_NE(r.Find("scale"), nullptr);
  EXPECT_FALSE(r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_PATH).ok());  // names are unique
  EXPECT_FALSE(r.LoadPlugin("/nonexistent/libnothing.so").ok());
}

TEST(Kernels, PluginPlanRejectsACountWhoseByteSizeWraps) {
  KernelRegistry r = KernelRegistry::WithBuiltins();
  ASSERT_TRUE(r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_PATH).ok());
  const uint64_t wraps[PAAM_MAX_PARAMS] = {(uint64_t{1} << 62) + 1, 1000, 0, 0};  // n * 4 == 4 (mod 2^64)
  uint64_t out = 0;
  EXPECT_FALSE(r.Find("scale")->Plan(wraps, 4, &out).ok());
  const uint64_t fits[PAAM_MAX_PARAMS] = {1, 1000, 0, 0};
  ASSERT_TRUE(r.Find("scale")->Plan(fits, 4, &out).ok());
  EXPECT_EQ(out, 4u);
}

}  // namespace
}  // namespace paam
