// backend/cuda/cuda_backend_test.cc — the CUDA backend and kernels on a real GPU.
// Every test skips (GTEST_SKIP) when the process sees no GPU, as in CI.
#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_kernels.h"
#include "common/clock.h"

// Counts operator new calls made by a thread while its counting flag is set (Run must not
// allocate on success).
namespace {
thread_local bool t_counting = false;
std::atomic<int> g_allocations{0};
}  // namespace
void* operator new(size_t n) {
  if (t_counting) g_allocations.fetch_add(1);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace paam {
namespace {

// A page-aligned mapping split into an input and an output area, like a client region.
class HostRegion {
 public:
  HostRegion(uint64_t input_capacity, uint64_t output_capacity, int unit = 0) {
    const uint64_t in = (input_capacity + 63) / 64 * 64;
    bytes_ = (in + output_capacity + 4095) / 4096 * 4096;
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(base_, MAP_FAILED);
    mem.base = base_;
    mem.mapping_bytes = bytes_;
    mem.input = base_;
    mem.input_capacity = input_capacity;
    mem.output = static_cast<char*>(base_) + in;
    mem.output_capacity = output_capacity;
    mem.device_index = unit;
  }
  ~HostRegion() { munmap(base_, bytes_); }
  template <typename T>
  T* in() { return static_cast<T*>(mem.input); }
  template <typename T>
  T* out() { return static_cast<T*>(mem.output); }

  RegionMemory mem;

 private:
  void* base_ = nullptr;
  uint64_t bytes_ = 0;
};

// A user kernel through the plugin ABI: reports the stream priority and the current device
// it was given, as two int32 values.
int PlanProbe(const uint64_t*, uint64_t in, uint64_t* out, char* err, size_t len) {
  if (in != 0) {
    std::snprintf(err, len, "probe takes no input");
    return PAAM_KERNEL_EINVAL;
  }
  *out = 8;
  return PAAM_KERNEL_OK;
}
int ProbeCuda(const paam_kernel_args* a) {
  int32_t v[2] = {99, -1};
  if (cudaStreamGetPriority(static_cast<cudaStream_t>(a->stream), &v[0]) != cudaSuccess) return PAAM_KERNEL_EFAILED;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) return PAAM_KERNEL_EFAILED;
  v[1] = dev;
  return cudaMemcpyAsync(a->output, v, sizeof(v), cudaMemcpyHostToDevice, static_cast<cudaStream_t>(a->stream)) ==
                 cudaSuccess
             ? PAAM_KERNEL_OK
             : PAAM_KERNEL_EFAILED;
}
int ProbeCpu(const paam_kernel_args*) { return PAAM_KERNEL_OK; }
int RunCpuOnly(const paam_kernel_args*) { return PAAM_KERNEL_OK; }

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (CudaDeviceCount(&why) == 0) GTEST_SKIP() << "no GPU: " << why;
    registry_ = KernelRegistry::WithBuiltins();
    ASSERT_TRUE(registry_.Add({"probe", "() -> i32[2]", PlanProbe, ProbeCpu, ProbeCuda}).ok());
    ASSERT_TRUE(registry_.Add({"cpu_only", "() -> i32[2]", PlanProbe, RunCpuOnly, nullptr}).ok());
  }

  std::unique_ptr<Backend> Make(int levels = 8, int lanes = 2, std::string devices = "", std::string wait = "") {
    BackendOptions o;
    o.kind = "cuda";
    o.levels = levels;
    o.best_effort_lanes = lanes;
    o.cuda_devices = std::move(devices);
    o.cuda_wait = std::move(wait);
    auto b = CreateCudaBackend(o, &registry_);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(b).value() : nullptr;
  }

  // Plans and runs `name` on the region; the region's input must already hold the data.
  Status RunOn(Backend* b, HostRegion* r, const char* name, std::vector<uint64_t> params, uint64_t input_bytes,
               int level, int lane = 0, DeviceTimes* times = nullptr) {
    KernelCall call;
    call.kernel = registry_.Find(name);
    if (call.kernel == nullptr) return Status(Errc::kUnknownKernel, name);
    call.region = &r->mem;
    call.input_bytes = input_bytes;
    for (size_t i = 0; i < params.size() && i < PAAM_MAX_PARAMS; ++i) call.params[i] = params[i];
    Status s = call.kernel->Plan(call.params, input_bytes, &call.output_bytes);
    if (!s.ok()) return s;
    return b->Run(call, level, lane, times);
  }

  // The CPU version of `name` on the region's input, into `out`.
  void RunCpu(HostRegion* r, const char* name, std::vector<uint64_t> params, uint64_t input_bytes,
              std::vector<uint8_t>* out) {
    const KernelEntry* k = registry_.Find(name);
    ASSERT_NE(k, nullptr);
    paam_kernel_args a{};
    for (size_t i = 0; i < params.size(); ++i) a.params[i] = params[i];
    ASSERT_TRUE(k->Plan(a.params, input_bytes, &a.output_bytes).ok());
    out->assign(a.output_bytes, 0);
    a.input = r->mem.input;
    a.input_bytes = input_bytes;
    a.output = out->data();
    ASSERT_EQ(k->run_cpu(&a), PAAM_KERNEL_OK);
  }

  KernelRegistry registry_;
  std::mt19937_64 rng_{12345};
};

void Fill(float* p, uint64_t n, std::mt19937_64* rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (uint64_t i = 0; i < n; ++i) p[i] = d(*rng);
}

double RelL2(const float* got, const float* want, uint64_t n) {
  double num = 0, den = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

// No GPU needed: paamd's backend asks CUDA for a hardware queue per stream (else bucket
// streams share queues and run FIFO whatever their priority); a user's setting is kept.
TEST(CudaBackendEnv, ReservesHardwareQueuesUnlessTheUserChose) {
  const char* before = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::string saved = before != nullptr ? before : "";
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  ReserveCudaHardwareQueues();
  ASSERT_NE(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), nullptr);
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "32");
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "16", 1);
  ReserveCudaHardwareQueues();
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "16");
  if (before != nullptr) setenv("CUDA_DEVICE_MAX_CONNECTIONS", saved.c_str(), 1);
  else setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);  // as the fixture's backends would set it
}

TEST_F(CudaBackendTest, LevelsFollowTheDevicePriorityRangeAndLowestLevelHasTheBestEffortLanes) {
  int least = 0, greatest = 0;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  auto b = Make(/*levels=*/64, /*lanes=*/3);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "cuda");
  EXPECT_EQ(b->Levels(), least - greatest + 1);
  EXPECT_EQ(b->Lanes(0), 1);
  EXPECT_EQ(b->Lanes(b->Levels() - 1), 3);
  EXPECT_EQ(b->Units(), CudaDeviceCount());
  auto two = Make(/*levels=*/2, /*lanes=*/1);  // a second backend in the same process
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->Levels(), std::min(2, least - greatest + 1));
}

TEST_F(CudaBackendTest, EachLevelRunsOnItsOwnStreamPriorityHighestFirst) {
  auto b = Make();
  ASSERT_NE(b, nullptr);
  HostRegion r(0, 8);
  ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
  int least = 0, greatest = 0;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  int previous = greatest - 1;
  for (int level = 0; level < b->Levels(); ++level) {
    for (int lane = 0; lane < b->Lanes(level); ++lane) {
      std::string note;
      ASSERT_TRUE(b->PrepareWorker(0, level, lane, &note).ok());
      EXPECT_NE(note.find("stream priority"), std::string::npos) << note;
      r.out<int32_t>()[0] = 1234;
      Status s = RunOn(b.get(), &r, "probe", {}, 0, level, lane);
      ASSERT_TRUE(s.ok()) << s.ToString();
      const int prio = r.out<int32_t>()[0];
      if (lane == 0) {
        EXPECT_GT(prio, previous) << "level " << level;  // numerically larger = less urgent
        previous = prio;
      }
      if (level == 0) {
        EXPECT_EQ(prio, greatest);
      }
      if (level == b->Levels() - 1) {
        EXPECT_EQ(prio, least);
      }
    }
  }
  b->DetachRegion(&r.mem);
  EXPECT_EQ(r.mem.backend_state, nullptr);
}

TEST_F(CudaBackendTest, PaamdNapsAndADirectClientSpinsByDefault) {
  if (std::getenv("PAAM_CUDA_WAIT") != nullptr) GTEST_SKIP() << "PAAM_CUDA_WAIT is set";
  for (const bool direct : {false, true}) {
    BackendOptions o;
    o.kind = "cuda";
    o.direct = direct;
    auto made = CreateCudaBackend(o, &registry_);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    std::string note;
    ASSERT_TRUE(made.value()->PrepareWorker(0, 0, 0, &note).ok());
    if (note.find(", poll wait") != std::string::npos) GTEST_SKIP() << "this driver falls back to poll";
    EXPECT_NE(note.find(direct ? ", spin wait" : ", nap wait"), std::string::npos) << direct << ": " << note;
  }
}

TEST_F(CudaBackendTest, EveryWaitModeCompletesAndNamesItselfAndABadOneIsRefused) {
  const std::pair<const char*, const char*> modes[] = {{"spin", ", spin wait"},
                                                       {"poll", ", poll wait"},
                                                       {"block", ", blocking wait"},
                                                       {"nap", ", nap wait (50 us)"},
                                                       {"nap:200", ", nap wait (200 us)"}};
  for (const auto& [mode, said] : modes) {
    BackendOptions o;
    o.kind = "cuda";
    o.levels = 2;
    o.cuda_wait = mode;
    auto made = CreateCudaBackend(o, &registry_);
    ASSERT_TRUE(made.ok()) << mode << ": " << made.status().ToString();
    auto b = std::move(made).value();
    std::string note;
    ASSERT_TRUE(b->PrepareWorker(0, 0, 0, &note).ok());
    // spin and nap fall back to poll on a driver that cannot write host memory from a stream
    const bool flagged = std::string_view(mode) == "spin" || std::string_view(mode).substr(0, 3) == "nap";
    if (!flagged || note.find(", poll wait") == std::string::npos) {
      EXPECT_NE(note.find(said), std::string::npos) << mode << ": " << note;
    }
    HostRegion r(0, 8);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    for (int i = 0; i < 20; ++i) {  // completion seen each time, never a stale output
      r.out<int32_t>()[0] = 1234;
      Status s = RunOn(b.get(), &r, "probe", {}, 0, 0);
      ASSERT_TRUE(s.ok()) << mode << ": " << s.ToString();
      EXPECT_NE(r.out<int32_t>()[0], 1234) << mode << " run " << i;
    }
    b->DetachRegion(&r.mem);
  }
  BackendOptions o;
  o.kind = "cuda";
  o.cuda_wait = "sleepy";
  auto bad = CreateCudaBackend(o, &registry_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(bad.status().ToString().find("sleepy"), std::string::npos) << bad.status().ToString();
}

TEST_F(CudaBackendTest, SpinLevelsSpinWhereTheOthersNapAndBothComplete) {
  // paamd --spin-buckets 1: level 0 spins on its completion word, level 1 keeps nap; a blocking
  // wait is left as it is (spin_levels changes a nap only).
  for (const char* wait : {"nap", "block"}) {
    BackendOptions o;
    o.kind = "cuda";
    o.levels = 2;
    o.cuda_wait = wait;
    o.spin_levels = 1;
    auto made = CreateCudaBackend(o, &registry_);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    auto b = std::move(made).value();
    std::string urgent, other;
    ASSERT_TRUE(b->PrepareWorker(0, 0, 0, &urgent).ok());
    ASSERT_TRUE(b->PrepareWorker(0, 1, 0, &other).ok());
    if (other.find(", poll wait") != std::string::npos) GTEST_SKIP() << "this driver falls back to poll";
    const bool nap = std::string_view(wait) == "nap";
    EXPECT_NE(urgent.find(nap ? ", spin wait" : ", blocking wait"), std::string::npos) << wait << ": " << urgent;
    EXPECT_NE(other.find(nap ? ", nap wait" : ", blocking wait"), std::string::npos) << wait << ": " << other;
    HostRegion r(0, 8);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    for (int level : {0, 1}) {
      for (int i = 0; i < 10; ++i) {
        r.out<int32_t>()[0] = 1234;
        Status s = RunOn(b.get(), &r, "probe", {}, 0, level);
        ASSERT_TRUE(s.ok()) << wait << " level " << level << ": " << s.ToString();
        EXPECT_NE(r.out<int32_t>()[0], 1234) << wait << " level " << level << " run " << i;
      }
    }
    b->DetachRegion(&r.mem);
  }
}

TEST_F(CudaBackendTest, BuiltinKernelsMatchTheirCpuVersionsOnRandomData) {
  auto b = Make();
  ASSERT_NE(b, nullptr);
  const int low = b->Levels() - 1;
  std::vector<uint8_t> want;

  {  // vector_add, an odd size
    const uint64_t n = 1'000'003;
    HostRegion r(2 * n * 4, n * 4);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    for (int rep = 0; rep < 2; ++rep) {
      Fill(r.in<float>(), 2 * n, &rng_);
      std::memset(r.mem.output, 0xcd, n * 4);  // poison
      ASSERT_TRUE(RunOn(b.get(), &r, "vector_add", {n}, 2 * n * 4, rep == 0 ? 0 : low).ok());
      RunCpu(&r, "vector_add", {n}, 2 * n * 4, &want);
      EXPECT_EQ(std::memcmp(r.mem.output, want.data(), n * 4), 0);
    }
    b->DetachRegion(&r.mem);
  }
  for (auto [m, k, n] : {std::tuple<uint64_t, uint64_t, uint64_t>{67, 129, 45}, {256, 256, 256}, {1, 1000, 3}}) {
    HostRegion r((m * k + k * n) * 4, m * n * 4);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    Fill(r.in<float>(), m * k + k * n, &rng_);
    std::memset(r.mem.output, 0xff, m * n * 4);  // NaN poison
    Status s = RunOn(b.get(), &r, "matmul", {m, k, n}, (m * k + k * n) * 4, 1);
    ASSERT_TRUE(s.ok()) << s.ToString();
    RunCpu(&r, "matmul", {m, k, n}, (m * k + k * n) * 4, &want);
    EXPECT_LT(RelL2(r.out<float>(), reinterpret_cast<float*>(want.data()), m * n), 1e-5) << m << "x" << k << "x" << n;
    b->DetachRegion(&r.mem);
  }
  {  // reduction
    const uint64_t n = 3'000'001;
    HostRegion r(n * 4, 4);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    std::uniform_real_distribution<float> d(0.0f, 1.0f);
    for (uint64_t i = 0; i < n; ++i) r.in<float>()[i] = d(rng_);
    r.out<float>()[0] = NAN;
    ASSERT_TRUE(RunOn(b.get(), &r, "reduction", {n}, n * 4, 0).ok());
    RunCpu(&r, "reduction", {n}, n * 4, &want);
    const float cpu = *reinterpret_cast<float*>(want.data());
    EXPECT_NEAR(r.out<float>()[0], cpu, 1e-5 * std::fabs(cpu));
    b->DetachRegion(&r.mem);
  }
  {  // histogram
    const uint64_t n = 5'000'011;
    HostRegion r(n, 1024);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    for (uint64_t i = 0; i < n; ++i) r.in<uint8_t>()[i] = static_cast<uint8_t>(rng_() >> 13);
    std::memset(r.mem.output, 0xcd, 1024);
    ASSERT_TRUE(RunOn(b.get(), &r, "histogram", {n}, n, low).ok());
    RunCpu(&r, "histogram", {n}, n, &want);
    EXPECT_EQ(std::memcmp(r.mem.output, want.data(), 1024), 0);
    uint64_t total = 0;
    for (int i = 0; i < 256; ++i) total += r.out<uint32_t>()[i];
    EXPECT_EQ(total, n);
    b->DetachRegion(&r.mem);
  }
}

TEST_F(CudaBackendTest, SpinOccupiesTheGpuForItsDurationAndTimesBracketTheKernel) {
  for (const char* wait : {"spin", "poll", "block", "nap"}) {
    SCOPED_TRACE(wait);
    auto b = Make(8, 2, "", wait);
    ASSERT_NE(b, nullptr);
    HostRegion r(0, 8);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    for (uint64_t duration : {uint64_t{2'000'000}, uint64_t{5'000'000}}) {
      DeviceTimes t;
      const uint64_t before = NowNs();
      ASSERT_TRUE(RunOn(b.get(), &r, "spin", {duration}, 0, 0, 0, &t).ok());
      const uint64_t after = NowNs();
      const uint64_t gpu_elapsed = r.out<uint64_t>()[0];
      EXPECT_GE(gpu_elapsed, duration * 99 / 100);
      EXPECT_LT(gpu_elapsed, duration * 10);
      EXPECT_GE(after - before, duration * 99 / 100);
      EXPECT_LE(before, t.start_ns);
      EXPECT_LE(t.start_ns, t.end_ns);
      EXPECT_LE(t.end_ns, after);
      EXPECT_GE(t.end_ns - t.start_ns, duration * 99 / 100);
    }
    ASSERT_TRUE(RunOn(b.get(), &r, "spin", {0}, 0, 0).ok());  // zero duration is allowed
    b->DetachRegion(&r.mem);
  }
}

// A sleeping wait sees the completion late; the device times must not carry that lateness
// into the kernel's start (it would read as a slow launch). With 2 ms naps a 3 ms kernel is
// seen about 4 ms after the issue, a millisecond after it ended.
TEST_F(CudaBackendTest, ASleepingWaitsLatenessIsNotCountedAsTheKernels) {
  auto b = Make(8, 2, "", "nap:2000");
  ASSERT_NE(b, nullptr);
  HostRegion r(0, 8);
  ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
  ASSERT_TRUE(RunOn(b.get(), &r, "spin", {0}, 0, 0).ok());  // warm
  DeviceTimes t;
  const uint64_t before = NowNs();
  ASSERT_TRUE(RunOn(b.get(), &r, "spin", {3'000'000}, 0, 0, 0, &t).ok());
  const uint64_t after = NowNs();
  EXPECT_GE(after - before, uint64_t{3'900'000}) << "the wait saw the completion before its second nap ended";
  EXPECT_LE(before, t.start_ns);
  // Anchored at the completion seen, the kernel's times would end within microseconds of
  // `after`; anchored at the issue, they end before the late wake-up (a lower bound, which a
  // busy machine only widens).
  EXPECT_GE(after - t.end_ns, uint64_t{500'000}) << "the launch absorbed the wait's lateness";
  b->DetachRegion(&r.mem);
}

TEST_F(CudaBackendTest, HighLevelRequestOvertakesALongLowLevelKernel) {
  auto b = Make();
  ASSERT_NE(b, nullptr);
  ASSERT_GE(b->Levels(), 2) << "this GPU has a single stream priority";
  const int low = b->Levels() - 1;
  HostRegion lo(0, 8);
  const uint64_t n = 1 << 22;
  HostRegion hi(2 * n * 4, n * 4);
  ASSERT_TRUE(b->AttachRegion(&lo.mem).ok());
  ASSERT_TRUE(b->AttachRegion(&hi.mem).ok());
  Fill(hi.in<float>(), 2 * n, &rng_);
  ASSERT_TRUE(RunOn(b.get(), &hi, "vector_add", {n}, 2 * n * 4, 0).ok());  // warm

  std::atomic<bool> low_done{false};
  std::atomic<uint64_t> low_end{0};
  std::thread low_worker([&] {
    std::string note;
    EXPECT_TRUE(b->PrepareWorker(0, low, 0, &note).ok());
    EXPECT_TRUE(RunOn(b.get(), &lo, "spin", {300'000'000}, 0, low).ok());  // 300 ms
    low_end = NowNs();
    low_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the spin occupies the GPU now
  const uint64_t t0 = NowNs();
  Status s = RunOn(b.get(), &hi, "vector_add", {n}, 2 * n * 4, 0);
  const uint64_t t1 = NowNs();
  const bool overtook = !low_done.load();
  low_worker.join();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(overtook) << "the level-0 request finished after the 300 ms low-level spin (it took "
                        << (t1 - t0) / 1e6 << " ms)";
  EXPECT_LT(t1, low_end.load());
  b->DetachRegion(&lo.mem);
  b->DetachRegion(&hi.mem);
}

TEST_F(CudaBackendTest, RunAllocatesNothingOnSuccess) {
  auto b = Make();
  ASSERT_NE(b, nullptr);
  const uint64_t n = 4096;
  HostRegion r(2 * n * 4, n * 4);
  ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
  Fill(r.in<float>(), 2 * n, &rng_);
  KernelCall call;
  call.kernel = registry_.Find("vector_add");
  call.region = &r.mem;
  call.input_bytes = 2 * n * 4;
  call.params[0] = n;
  ASSERT_TRUE(call.kernel->Plan(call.params, call.input_bytes, &call.output_bytes).ok());
  DeviceTimes t;
  ASSERT_TRUE(b->Run(call, 0, 0, &t).ok());  // warm
  g_allocations = 0;
  t_counting = true;
  bool ok = true;
  for (int i = 0; i < 100; ++i) ok = ok && b->Run(call, i % b->Levels(), 0, &t).ok();
  t_counting = false;
  EXPECT_TRUE(ok);
  EXPECT_EQ(g_allocations.load(), 0);
  b->DetachRegion(&r.mem);
}

TEST_F(CudaBackendTest, BestEffortLanesRunConcurrentlyWithoutMixingResults) {
  auto b = Make(8, 3);
  ASSERT_NE(b, nullptr);
  const int low = b->Levels() - 1;
  const uint64_t n = 100'000;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int lane = 0; lane < b->Lanes(low); ++lane) {
    threads.emplace_back([&, lane] {
      HostRegion r(2 * n * 4, n * 4);
      if (!b->AttachRegion(&r.mem).ok()) {
        ++failures;
        return;
      }
      std::mt19937_64 rng(lane);
      for (int it = 0; it < 50; ++it) {
        Fill(r.in<float>(), 2 * n, &rng);
        if (!RunOn(b.get(), &r, "vector_add", {n}, 2 * n * 4, low, lane).ok()) ++failures;
        for (uint64_t i = 0; i < n; i += 997) {
          if (r.out<float>()[i] != r.in<float>()[i] + r.in<float>()[n + i]) {
            ++failures;
            break;
          }
        }
      }
      b->DetachRegion(&r.mem);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// BackendOptions::lanes: the most urgent level with two lanes has two streams, both at its
// priority (the greatest); the level without an entry keeps its one lane, the lowest its
// best-effort ones. (Whether two kernels then overlap depends on the kernels: two `spin`s do
// not, each takes every block slot.)
TEST_F(CudaBackendTest, LanesGiveAnyLevelSeveralStreamsAtItsPriority) {
  BackendOptions o;
  o.kind = "cuda";
  o.levels = 4;
  o.best_effort_lanes = 3;
  o.lanes = {2};
  auto made = CreateCudaBackend(o, &registry_);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Backend* b = made->get();
  ASSERT_GE(b->Levels(), 2);
  EXPECT_EQ(b->Lanes(0), 2);
  EXPECT_EQ(b->Lanes(1), b->Levels() > 2 ? 1 : 3);
  EXPECT_EQ(b->Lanes(b->Levels() - 1), 3);
  int least = 0, greatest = 0;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  HostRegion r(0, 8);
  ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
  for (int lane = 0; lane < 2; ++lane) {
    std::string note;
    ASSERT_TRUE(b->PrepareWorker(0, 0, lane, &note).ok()) << note;
    r.out<int32_t>()[0] = 1234;
    Status s = RunOn(b, &r, "probe", {}, 0, /*level=*/0, lane);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(r.out<int32_t>()[0], greatest) << "lane " << lane;
  }
  EXPECT_FALSE(b->PrepareWorker(0, 0, 2, nullptr).ok()) << "level 0 has two lanes, not three";
  b->DetachRegion(&r.mem);
}

// spin's width (params[2], a percentage of the GPU's block slots): two half-width spins on the
// two lanes of one level run side by side: their device intervals intersect, and neither takes
// much longer than its duration on the device (event-timed there, so a busy host cannot
// stretch it); two full-width ones take about two durations, one after the other, whichever
// lane they are on. A width over 100 is refused.
TEST_F(CudaBackendTest, NarrowSpinsOnTwoLanesRunSideBySide) {
  BackendOptions o;
  o.kind = "cuda";
  o.levels = 4;
  o.lanes = {2};
  auto made = CreateCudaBackend(o, &registry_);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Backend* b = made->get();
  ASSERT_EQ(b->Lanes(0), 2);
  HostRegion r0(0, 8), r1(0, 8);
  ASSERT_TRUE(b->AttachRegion(&r0.mem).ok());
  ASSERT_TRUE(b->AttachRegion(&r1.mem).ok());
  ASSERT_TRUE(RunOn(b, &r0, "spin", {0}, 0, 0).ok());  // warm
  EXPECT_EQ(RunOn(b, &r0, "spin", {1'000'000, 0, 101}, 0, 0).code(), Errc::kInvalidArgument);
  const uint64_t duration = 50'000'000;
  bool overlapped = false;
  uint64_t longest_on_device = 0;
  auto pair = [&](uint64_t width) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::atomic<int> failures{0};
    uint64_t gpu[2] = {0, 0};
    DeviceTimes times[2];
    auto lane = [&](int l, HostRegion* r) {
      if (!b->PrepareWorker(0, 0, l, nullptr).ok()) ++failures;
      ++ready;
      while (!go.load()) {
      }
      if (!RunOn(b, r, "spin", {duration, 0, width}, 0, 0, l, &times[l]).ok()) ++failures;
      gpu[l] = r->out<uint64_t>()[0];
    };
    std::thread t0(lane, 0, &r0), t1(lane, 1, &r1);
    while (ready.load() < 2) {
    }
    const uint64_t start = NowNs();
    go = true;
    t0.join();
    t1.join();
    const uint64_t makespan = NowNs() - start;
    EXPECT_EQ(failures.load(), 0);
    EXPECT_GE(gpu[0], duration * 99 / 100);
    EXPECT_GE(gpu[1], duration * 99 / 100);
    overlapped = std::max(times[0].start_ns, times[1].start_ns) < std::min(times[0].end_ns, times[1].end_ns);
    longest_on_device = std::max(times[0].end_ns - times[0].start_ns, times[1].end_ns - times[1].start_ns);
    return makespan;
  };
  const uint64_t half = pair(50);
  EXPECT_TRUE(overlapped) << "two half-width spins did not overlap (" << half / 1e6 << " ms for both)";
  EXPECT_LT(longest_on_device, duration * 3 / 2) << "a half-width spin waited for the other on the device";
  const uint64_t full = pair(100);
  EXPECT_GT(full, duration * 9 / 5) << "two full-width spins took " << full / 1e6 << " ms";
  b->DetachRegion(&r0.mem);
  b->DetachRegion(&r1.mem);
}

// Cancellation as paamd drives it: the server stores the running request's ticket into its
// lane's cancel word (Backend::CancelWord: mapped pinned host memory, one per lane). A 5 s spin
// (full width, and at half width: one launch per wave) stops at its next block and Run reports
// kCancelled well before the 5 s; matmul stops at its next k-slice (here: the word is raised
// before it starts). A word holding another request's ticket changes nothing: the spin runs its
// whole duration and matmul's result matches the CPU's.
TEST_F(CudaBackendTest, ARaisedCancelWordStopsSpinAndMatmulAtTheirNextSlice) {
  for (const char* wait : {"spin", "block", "nap"}) {
    SCOPED_TRACE(wait);
    auto b = Make(8, 2, "", wait);
    ASSERT_NE(b, nullptr);
    std::atomic<uint64_t>* word = b->CancelWord(0, 0, 0);
    ASSERT_NE(word, nullptr);
    EXPECT_NE(word, b->CancelWord(0, b->Levels() - 1, 0)) << "one word per lane";
    EXPECT_EQ(b->CancelWord(0, b->Levels(), 0), nullptr);
    HostRegion r(0, 8);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    auto run = [&](HostRegion* region, const char* name, std::vector<uint64_t> params, uint64_t input_bytes,
                   uint64_t ticket) {
      KernelCall call;
      call.kernel = registry_.Find(name);
      call.region = &region->mem;
      call.input_bytes = input_bytes;
      for (size_t i = 0; i < params.size(); ++i) call.params[i] = params[i];
      EXPECT_TRUE(call.kernel->Plan(call.params, input_bytes, &call.output_bytes).ok());
      call.cancel = word;
      call.ticket = ticket;
      DeviceTimes t;
      return b->Run(call, 0, 0, &t);
    };
    ASSERT_TRUE(run(&r, "spin", {1'000'000}, 0, 1).ok());  // warm
    uint64_t ticket = 10;
    for (uint64_t width : {0, 50}) {
      SCOPED_TRACE(width);
      ++ticket;
      word->store(0);
      Status st;
      const uint64_t t0 = NowNs();
      std::thread worker([&] {
        std::string note;
        EXPECT_TRUE(b->PrepareWorker(0, 0, 0, &note).ok());
        st = run(&r, "spin", {5'000'000'000, 0, width}, 0, ticket);
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      word->store(ticket, std::memory_order_seq_cst);
      b->CancelRaised();
      worker.join();
      const uint64_t took = NowNs() - t0;
      EXPECT_EQ(st.code(), Errc::kCancelled) << st.ToString();
      EXPECT_LT(took, uint64_t{3'000'000'000}) << "the 5 s spin was not stopped";
    }
    word->store(5);  // another request's ticket
    const uint64_t t0 = NowNs();
    ASSERT_TRUE(run(&r, "spin", {200'000'000}, 0, 6).ok());
    EXPECT_GE(NowNs() - t0, uint64_t{198'000'000});
    EXPECT_GE(r.out<uint64_t>()[0], uint64_t{198'000'000}) << "the spin stopped for a ticket not its own";

    const uint64_t n = 1024;
    HostRegion big(2 * n * n * 4, n * n * 4);
    ASSERT_TRUE(b->AttachRegion(&big.mem).ok());
    Fill(big.in<float>(), 2 * n * n, &rng_);
    word->store(21);
    const Status st = run(&big, "matmul", {n, n, n}, 2 * n * n * 4, 21);
    EXPECT_EQ(st.code(), Errc::kCancelled) << st.ToString();
    const uint64_t m = 96, k = 300, nn = 70;  // several k-slices, ragged tiles
    HostRegion small(4 * (m * k + k * nn), 4 * m * nn);
    ASSERT_TRUE(b->AttachRegion(&small.mem).ok());
    Fill(small.in<float>(), m * k + k * nn, &rng_);
    ASSERT_TRUE(run(&small, "matmul", {m, k, nn}, 4 * (m * k + k * nn), 22).ok());
    std::vector<uint8_t> want;
    RunCpu(&small, "matmul", {m, k, nn}, 4 * (m * k + k * nn), &want);
    EXPECT_LT(RelL2(small.out<float>(), reinterpret_cast<const float*>(want.data()), m * nn), 1e-4);
    b->DetachRegion(&small.mem);
    b->DetachRegion(&big.mem);
    b->DetachRegion(&r.mem);
  }
}

TEST_F(CudaBackendTest, ErrorsAreReportedNotCrashed) {
  BackendOptions o;
  o.kind = "cuda";
  o.cuda_devices = "99";
  auto bad = CreateCudaBackend(o, &registry_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Errc::kInvalidArgument);
  o.cuda_devices = "0,0";
  EXPECT_FALSE(CreateCudaBackend(o, &registry_).ok());

  auto b = Make();
  ASSERT_NE(b, nullptr);
  HostRegion r(64, 8);
  ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
  Status s;
  EXPECT_FALSE(b->AttachRegion(&r.mem).ok());  // twice
  s = RunOn(b.get(), &r, "cpu_only", {}, 0, 0);
  EXPECT_EQ(s.code(), Errc::kUnknownKernel);
  s = RunOn(b.get(), &r, "vector_add", {100}, 800, 0);  // input larger than the region
  EXPECT_EQ(s.code(), Errc::kInputTooLarge);
  EXPECT_FALSE(b->PrepareWorker(0, b->Levels(), 0, nullptr).ok());
  EXPECT_TRUE(RunOn(b.get(), &r, "probe", {}, 0, 0).ok());  // still usable afterwards
  b->DetachRegion(&r.mem);
  HostRegion elsewhere(64, 8, /*unit=*/b->Units());
  EXPECT_FALSE(b->AttachRegion(&elsewhere.mem).ok());
}

TEST_F(CudaBackendTest, RegionsNeverAttachedAreAttachedOnFirstUseAndReused) {
  // Direct mode may hand Run() a fresh RegionMemory over the same buffers on every call.
  auto b = Make();
  ASSERT_NE(b, nullptr);
  const uint64_t n = 1000;
  std::vector<float> buffer(3 * n + 16);  // one unaligned heap buffer split in two
  Fill(buffer.data(), 2 * n, &rng_);
  KernelCall call;
  call.kernel = registry_.Find("vector_add");
  call.input_bytes = 2 * n * 4;
  call.params[0] = n;
  ASSERT_TRUE(call.kernel->Plan(call.params, call.input_bytes, &call.output_bytes).ok());
  for (int i = 0; i < 3; ++i) {
    RegionMemory mem;
    mem.input = buffer.data();
    mem.input_capacity = 2 * n * 4;
    mem.output = buffer.data() + 2 * n;
    mem.output_capacity = n * 4 + 64;
    call.region = &mem;
    std::fill(buffer.begin() + 2 * n, buffer.end(), NAN);
    g_allocations = 0;
    t_counting = i > 0;
    Status s = b->Run(call, 0, 0, nullptr);
    t_counting = false;
    ASSERT_TRUE(s.ok()) << s.ToString();
    if (i > 0) EXPECT_EQ(g_allocations.load(), 0) << "run " << i << " attached again";
    EXPECT_EQ(mem.backend_state, nullptr);  // the caller's struct is left alone
    for (uint64_t j = 0; j < n; ++j) ASSERT_EQ(buffer[2 * n + j], buffer[j] + buffer[n + j]) << j;
  }
}

TEST_F(CudaBackendTest, RegionsRunOnTheirOwnGpu) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs two GPUs";
  auto b = Make();
  ASSERT_NE(b, nullptr);
  ASSERT_GE(b->Units(), 2);
  for (int unit = 0; unit < b->Units(); ++unit) {
    HostRegion r(0, 8, unit);
    ASSERT_TRUE(b->AttachRegion(&r.mem).ok());
    ASSERT_TRUE(b->PrepareWorker(unit, 0, 0, nullptr).ok());
    ASSERT_TRUE(RunOn(b.get(), &r, "probe", {}, 0, 0).ok());
    EXPECT_EQ(r.out<int32_t>()[1], unit);  // cuda_devices empty: unit i is GPU i
    b->DetachRegion(&r.mem);
  }
  auto only_second = Make(8, 1, "1");
  ASSERT_NE(only_second, nullptr);
  EXPECT_EQ(only_second->Units(), 1);
  HostRegion r(0, 8, 0);
  ASSERT_TRUE(only_second->AttachRegion(&r.mem).ok());
  ASSERT_TRUE(RunOn(only_second.get(), &r, "probe", {}, 0, 0).ok());
  EXPECT_EQ(r.out<int32_t>()[1], 1);
  only_second->DetachRegion(&r.mem);
}

TEST(CudaKernelsTest, BuiltinTableNamesEveryBuiltinWithACudaVersion) {
  size_t count = 0;
  const cuda::CudaBuiltin* table = cuda::CudaBuiltins(&count);
  KernelRegistry registry = KernelRegistry::WithBuiltins();
  AttachCudaBuiltins(&registry);  // needs no GPU
  EXPECT_EQ(count, registry.size()) << "every built-in has a CUDA version";
  for (const char* name : {"vector_add", "matmul", "reduction", "histogram", "spin", "noop"}) {
    const KernelEntry* k = registry.Find(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_NE(k->run_cuda, nullptr) << name;
  }
  for (size_t i = 0; i < count; ++i) EXPECT_NE(registry.Find(table[i].name), nullptr) << table[i].name;
}

TEST(CudaKernelsTest, NoGpuGivesAClearErrorOrABackend) {
  std::string why;
  KernelRegistry registry = KernelRegistry::WithBuiltins();
  auto b = CreateCudaBackend(BackendOptions{}, &registry);
  if (CudaDeviceCount(&why) == 0) {
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.status().message().find("no CUDA GPU found (cuda"), std::string::npos) << b.status().message();
  } else {
    EXPECT_TRUE(b.ok()) << b.status().ToString();
  }
}

}  // namespace
}  // namespace paam
