// backend/cuda/cuda_preempt_test.cc — preemption in slices (cuda_preempt.h, cuda_kernels.h) on a
// real GPU: sliced kernels paused and resumed give what unsliced ones give (and what the CPU
// versions give), a more urgent request overtakes a long sliced one and pauses it, a plugin's
// CUDA slices let a more urgent request in between, and a lower level's request is held back
// while more urgent work runs or waits. Every test skips without a GPU (CI). Timing thresholds
// are loose: the GPU may be shared and the host busy.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_preempt.h"
#include "common/clock.h"

namespace paam {
namespace {

using std::chrono::milliseconds;

bool HaveGpu(std::string* why) { return CudaDeviceCount(why) > 0; }

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

// ------------------------------------------------------------------ kernels, no backend

// One built-in kernel on device buffers, run unsliced, and sliced while a host thread raises and
// lowers the urgent word at random moments (the kernel pauses and is resumed until done).
struct KernelCase {
  const char* name;
  int (*cuda)(const paam_kernel_args*);
  std::vector<uint64_t> params;
  std::vector<uint8_t> input;
  uint64_t output_bytes;
};

class SlicedKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!HaveGpu(&why)) GTEST_SKIP() << "no GPU: " << why;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cuda::PrepareCudaKernels(0), 0);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_TRUE(words_.Allocate(/*levels=*/2, /*lanes=*/1).ok());
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // The output of `c`: unsliced when `pauses` is null, else sliced with random pauses (counted).
  std::vector<uint8_t> Run(const KernelCase& c, int* pauses) {
    void* din = nullptr;
    void* dout = nullptr;
    EXPECT_EQ(cudaMalloc(&din, std::max<size_t>(c.input.size(), 256)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&dout, std::max<uint64_t>(c.output_bytes, 256)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(din, c.input.data(), c.input.size(), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemset(dout, 0x5a, c.output_bytes), cudaSuccess);  // not what any kernel writes
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the legacy stream's memset is not ordered with stream_
    paam_kernel_args a{};
    a.input = din;
    a.input_bytes = c.input.size();
    a.output = dout;
    a.output_bytes = c.output_bytes;
    for (size_t i = 0; i < c.params.size(); ++i) a.params[i] = c.params[i];
    a.device = PAAM_DEVICE_CUDA;
    a.stream = stream_;
    if (pauses == nullptr) {
      EXPECT_EQ(c.cuda(&a), PAAM_KERNEL_OK);
      EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    } else {
      std::atomic<uint64_t>* word = words_.Word(1);
      word->store(1);  // urgent from the start: the first launch pauses at once
      std::atomic<bool> stop{false};
      std::thread toggler([&] {
        std::mt19937_64 rng(99);
        bool up = true;
        while (!stop.load()) {
          std::this_thread::sleep_for(std::chrono::microseconds(5 + rng() % 60));
          up = !up;
          word->store(up ? 1 : 0);
        }
        word->store(0);
      });
      bool resume = false;
      int launches = 0;
      for (;;) {
        cuda::SetCudaPreempt(words_.Kernels(0, 1, cuda::kDefaultPreemptSliceNs, resume));
        EXPECT_EQ(c.cuda(&a), PAAM_KERNEL_OK);
        cuda::SetCudaPreempt({});
        EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
        if (!words_.Paused(0)) break;
        ++*pauses;
        resume = true;
        if (++launches == 200) stop = true;  // then the word stays down and the kernel ends
        if (launches > 10000) {
          ADD_FAILURE() << c.name << ": no end";
          break;
        }
      }
      stop = true;
      toggler.join();
    }
    std::vector<uint8_t> out(c.output_bytes);
    EXPECT_EQ(cudaMemcpy(out.data(), dout, c.output_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(din);
    cudaFree(dout);
    return out;
  }

  // The CPU version of the built-in `c.name`.
  std::vector<uint8_t> Cpu(const KernelCase& c) {
    KernelRegistry reg = KernelRegistry::WithBuiltins();
    const KernelEntry* k = reg.Find(c.name);
    paam_kernel_args a{};
    for (size_t i = 0; i < c.params.size(); ++i) a.params[i] = c.params[i];
    std::vector<uint8_t> out(c.output_bytes);
    a.input = c.input.data();
    a.input_bytes = c.input.size();
    a.output = out.data();
    a.output_bytes = c.output_bytes;
    EXPECT_EQ(k->run_cpu(&a), PAAM_KERNEL_OK);
    return out;
  }

  cudaStream_t stream_ = nullptr;
  CudaPreemptWords words_;
  std::mt19937_64 rng_{2024};
};

std::vector<uint8_t> Floats(uint64_t n, std::mt19937_64* rng) {
  std::vector<uint8_t> v(n * 4);
  Fill(reinterpret_cast<float*>(v.data()), n, rng);
  return v;
}

TEST_F(SlicedKernels, PausedAndResumedGiveWhatUnslicedKernelsAndTheCpuGive) {
  const uint64_t vn = 5'000'003, rn = 3'000'001, hn = 10'000'019;
  const uint64_t m = 300, k = 2000, n = 260;  // 24 k-slices of 128, 5x5 tiles of 64 (edges ragged)
  std::vector<uint8_t> bytes(hn);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng_() >> 13);
  const KernelCase cases[] = {
      {"vector_add", cuda::VectorAddCuda, {vn}, Floats(2 * vn, &rng_), vn * 4},
      {"reduction", cuda::ReductionCuda, {rn}, Floats(rn, &rng_), 4},
      {"histogram", cuda::HistogramCuda, {hn}, bytes, 1024},
      {"matmul", cuda::MatmulCuda, {m, k, n}, Floats(m * k + k * n, &rng_), m * n * 4},
  };
  for (const KernelCase& c : cases) {
    SCOPED_TRACE(c.name);
    int pauses = 0;
    const std::vector<uint8_t> plain = Run(c, nullptr);
    const std::vector<uint8_t> sliced = Run(c, &pauses);
    const std::vector<uint8_t> cpu = Cpu(c);
    EXPECT_GT(pauses, 0) << "the urgent word never paused the kernel";
    const auto* fs = reinterpret_cast<const float*>(sliced.data());
    const auto* fc = reinterpret_cast<const float*>(cpu.data());
    if (std::string(c.name) == "reduction") {
      // float atomics: the order of the partial sums differs from run to run, sliced or not
      EXPECT_NEAR(fs[0], fc[0], 1e-3 * std::max(1.0f, std::fabs(fc[0])));
    } else {
      // each item once, in the same arithmetic: the very bytes of the unsliced run
      EXPECT_EQ(sliced, plain);
      if (std::string(c.name) == "histogram") {
        EXPECT_EQ(sliced, cpu);
      } else {
        EXPECT_LT(RelL2(fs, fc, c.output_bytes / 4), 1e-5);
      }
    }
  }
}

TEST_F(SlicedKernels, APausedSpinResumesAndSpinsItsWholeDuration) {
  KernelCase c{"spin", cuda::SpinCuda, {20'000'000, 0, 0}, {}, 8};  // 20 ms
  int pauses = 0;
  const std::vector<uint8_t> out = Run(c, &pauses);
  uint64_t elapsed = 0;
  std::memcpy(&elapsed, out.data(), 8);
  EXPECT_GT(pauses, 0);
  EXPECT_GE(elapsed, 20'000'000u) << "the elapsed time counts the pauses and every slice";
  c.params = {20'000'000, 0, 25};  // a quarter of the GPU
  pauses = 0;
  const std::vector<uint8_t> narrow = Run(c, &pauses);
  std::memcpy(&elapsed, narrow.data(), 8);
  EXPECT_GT(pauses, 0);
  EXPECT_GE(elapsed, 20'000'000u);
}

// ------------------------------------------------------------------ through the backend

// No GPU needed: a version 2 kernel's CUDA slices come as a pair, and with run_cuda.
TEST(PluginSlices, TheRegistryTakesCudaSlicesOnlyAsAPairBesideRunCuda) {
  KernelRegistry reg;
  auto slices = [](void*, const paam_kernel_args*) -> uint64_t { return 2; };
  auto slice = [](void*, const paam_kernel_args*, uint64_t, uint64_t, char*, size_t) { return PAAM_KERNEL_OK; };
  auto run = [](void*, const paam_kernel_args*, char*, size_t) { return PAAM_KERNEL_OK; };
  auto plan = [](void*, const paam_plan_args*, uint64_t* out, char*, size_t) {
    *out = 8;
    return PAAM_KERNEL_OK;
  };
  paam_kernel_v2 k{"sliced", "", nullptr, nullptr, plan, nullptr, run, slices, slice};
  ASSERT_TRUE(reg.Add(k).ok());
  EXPECT_TRUE(reg.Find("sliced")->HasCudaSlices());
  paam_kernel_args a{};
  EXPECT_EQ(reg.Find("sliced")->CudaSlices(&a), 2u);
  k.name = "half";
  k.run_cuda_slice = nullptr;
  Status s = reg.Add(k);
  EXPECT_EQ(s.code(), Errc::kInvalidArgument);
  EXPECT_NE(s.message().find("cuda_slices and run_cuda_slice go together"), std::string::npos) << s.ToString();
  k.name = "no_run";
  k.run_cuda_slice = slice;
  k.run_cuda = nullptr;
  k.run_cpu = run;
  EXPECT_EQ(reg.Add(k).code(), Errc::kInvalidArgument);
  k.name = "plain";
  k.cuda_slices = nullptr;
  k.run_cuda_slice = nullptr;
  ASSERT_TRUE(reg.Add(k).ok());
  EXPECT_FALSE(reg.Find("plain")->HasCudaSlices());
  EXPECT_EQ(reg.Find("plain")->CudaSlices(&a), 0u);
}

// A region of host memory like a client's.
class HostRegion {
 public:
  HostRegion(uint64_t in, uint64_t out) {
    const uint64_t in_al = (in + 63) / 64 * 64;
    bytes_ = (in_al + out + 4095) / 4096 * 4096;
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    mem.base = base_;
    mem.mapping_bytes = bytes_;
    mem.input = base_;
    mem.input_capacity = in;
    mem.output = static_cast<char*>(base_) + in_al;
    mem.output_capacity = out;
  }
  ~HostRegion() { munmap(base_, bytes_); }
  RegionMemory mem;

 private:
  void* base_ = nullptr;
  uint64_t bytes_ = 0;
};

// A plugin kernel (ABI version 2) that holds the whole GPU in blocks of `params[0]` ms for
// params[1] ms in all: run_cuda is one long wave, which a more urgent stream cannot get into;
// its CUDA slices are a wave each. It runs the built-in spin as a foreign kernel would run its
// own: without the built-ins' preemption (SetCudaPreempt({})).
int PlanHold(void*, const paam_plan_args* a, uint64_t* out, char*, size_t) {
  if (a->params[0] == 0 || a->params[1] < a->params[0]) return PAAM_KERNEL_EINVAL;
  *out = 8;
  return PAAM_KERNEL_OK;
}
int HoldCuda(void*, const paam_kernel_args* a, char*, size_t) {
  cuda::SetCudaPreempt({});
  paam_kernel_args s = *a;
  s.params[0] = a->params[1] * 1'000'000;  // the whole duration ...
  s.params[1] = a->params[1] * 1'000'000;  // ... in one wave of blocks
  s.params[2] = 0;
  return cuda::SpinCuda(&s);
}
uint64_t HoldSlices(void*, const paam_kernel_args* a) { return a->params[1] / a->params[0]; }
int HoldSlice(void*, const paam_kernel_args* a, uint64_t begin, uint64_t end, char*, size_t) {
  cuda::SetCudaPreempt({});
  paam_kernel_args s = *a;
  s.params[0] = (end - begin) * a->params[0] * 1'000'000;
  s.params[1] = a->params[0] * 1'000'000;  // one wave per slice
  s.params[2] = 0;
  return cuda::SpinCuda(&s);
}

// A plugin kernel that counts its runs.
std::atomic<int> g_count_runs{0};
int PlanCount(void*, const paam_plan_args*, uint64_t* out, char*, size_t) {
  *out = 8;
  return PAAM_KERNEL_OK;
}
int CountCuda(void*, const paam_kernel_args* a, char*, size_t) {
  g_count_runs.fetch_add(1);
  return cudaMemsetAsync(a->output, 0, 8, static_cast<cudaStream_t>(a->stream)) == cudaSuccess ? PAAM_KERNEL_OK
                                                                                               : PAAM_KERNEL_EFAILED;
}

class PreemptBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!HaveGpu(&why)) GTEST_SKIP() << "no GPU: " << why;
    registry_ = KernelRegistry::WithBuiltins();
    paam_kernel_v2 hold{"hold", "() -> u64; params: slice_ms, total_ms", nullptr, nullptr, PlanHold, nullptr,
                        HoldCuda, HoldSlices, HoldSlice};
    ASSERT_TRUE(registry_.Add(hold).ok());
    hold.name = "hold_unsliced";
    hold.cuda_slices = nullptr;
    hold.run_cuda_slice = nullptr;
    ASSERT_TRUE(registry_.Add(hold).ok());
    paam_kernel_v2 count{"count", "() -> u64", nullptr, nullptr, PlanCount, nullptr, CountCuda, nullptr, nullptr};
    ASSERT_TRUE(registry_.Add(count).ok());
  }

  std::unique_ptr<Backend> Make(bool preempt) {
    BackendOptions o;
    o.kind = "cuda";
    o.levels = 2;
    o.best_effort_lanes = 1;
    o.cuda_devices = "0";
    o.cuda_wait = "spin";
    o.gpu_preempt = preempt;
    auto b = CreateCudaBackend(o, &registry_);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(b).value() : nullptr;
  }

  Status RunOn(Backend* b, HostRegion* r, const char* name, std::vector<uint64_t> params, uint64_t input_bytes,
               int level, DeviceTimes* times = nullptr, const std::atomic<uint64_t>* cancel = nullptr,
               uint64_t ticket = 0) {
    KernelCall call;
    call.kernel = registry_.Find(name);
    call.region = &r->mem;
    call.input_bytes = input_bytes;
    for (size_t i = 0; i < params.size(); ++i) call.params[i] = params[i];
    call.cancel = cancel;
    call.ticket = ticket;
    Status s = call.kernel->Plan(call.params, input_bytes, &call.output_bytes);
    if (!s.ok()) return s;
    DeviceTimes t;
    return b->Run(call, level, 0, times != nullptr ? times : &t);
  }

  KernelRegistry registry_;
};

double MsSince(uint64_t t0) { return static_cast<double>(NowNs() - t0) / 1e6; }

// A 400 ms spin at level 1; 50 ms in, a 100 ms spin on a quarter of the GPU at level 0. The
// urgent one ends within a small part of the long one's time, and the long one is paused all
// through it: without preemption it would keep three quarters of the GPU and end about 25 ms
// late, not 100.
TEST_F(PreemptBackend, AMoreUrgentRequestOvertakesALongSlicedOneThatPausesMeanwhile) {
  auto b = Make(true);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->Levels(), 2);
  HostRegion lp(0, 8), hp(0, 8);
  ASSERT_TRUE(b->AttachRegion(&lp.mem).ok());
  ASSERT_TRUE(b->AttachRegion(&hp.mem).ok());
  ASSERT_TRUE(b->PrepareWorker(0, 0, 0, nullptr).ok());
  Status lp_status;
  std::thread low([&] {
    ASSERT_TRUE(b->PrepareWorker(0, 1, 0, nullptr).ok());
    lp_status = RunOn(b.get(), &lp, "spin", {400'000'000, 0, 0}, 0, 1);
  });
  std::this_thread::sleep_for(milliseconds(50));
  const uint64_t t0 = NowNs();
  Status hs = RunOn(b.get(), &hp, "spin", {100'000'000, 0, 25}, 0, 0);
  const double hp_ms = MsSince(t0);
  low.join();
  ASSERT_TRUE(hs.ok()) << hs.ToString();
  ASSERT_TRUE(lp_status.ok()) << lp_status.ToString();
  uint64_t lp_ns = 0;
  std::memcpy(&lp_ns, lp.mem.output, 8);
  EXPECT_LT(hp_ms, 250.0) << "the urgent request waited for the long one";
  EXPECT_GE(lp_ns, 470'000'000u) << "the long spin kept running beside the urgent one (" << lp_ns / 1e6 << " ms)";
  b->DetachRegion(&lp.mem);
  b->DetachRegion(&hp.mem);
}

// A long matmul at level 1 while level 0 keeps sending short requests: paused and resumed any
// number of times, it gives the CPU's product, and the very bytes of an undisturbed run.
TEST_F(PreemptBackend, APausedMatmulGivesTheProductOfAnUndisturbedRun) {
  auto b = Make(true);
  ASSERT_NE(b, nullptr);
  const uint64_t m = 128, k = 8192, n = 128;  // 64 k-slices of 128
  HostRegion lp(4 * (m * k + k * n), 4 * m * n), hp(8 * 65536, 4 * 65536);
  std::mt19937_64 rng(5);
  Fill(static_cast<float*>(lp.mem.input), m * k + k * n, &rng);
  Fill(static_cast<float*>(hp.mem.input), 2 * 65536, &rng);
  ASSERT_TRUE(b->AttachRegion(&lp.mem).ok());
  ASSERT_TRUE(b->AttachRegion(&hp.mem).ok());
  ASSERT_TRUE(b->PrepareWorker(0, 1, 0, nullptr).ok());
  ASSERT_TRUE(RunOn(b.get(), &lp, "matmul", {m, k, n}, 4 * (m * k + k * n), 1).ok());
  const std::vector<float> quiet(static_cast<float*>(lp.mem.output), static_cast<float*>(lp.mem.output) + m * n);
  std::atomic<bool> stop{false};
  std::thread high([&] {
    ASSERT_TRUE(b->PrepareWorker(0, 0, 0, nullptr).ok());
    while (!stop.load()) {
      EXPECT_TRUE(RunOn(b.get(), &hp, "vector_add", {65536}, 8 * 65536, 0).ok());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  for (int i = 0; i < 10; ++i) {
    std::memset(lp.mem.output, 0, 4 * m * n);
    ASSERT_TRUE(RunOn(b.get(), &lp, "matmul", {m, k, n}, 4 * (m * k + k * n), 1).ok());
    ASSERT_EQ(std::memcmp(lp.mem.output, quiet.data(), 4 * m * n), 0) << "run " << i;
  }
  stop = true;
  high.join();
  KernelRegistry cpu = KernelRegistry::WithBuiltins();
  std::vector<float> want(m * n);
  paam_kernel_args a{};
  a.params[0] = m, a.params[1] = k, a.params[2] = n;
  a.input = lp.mem.input;
  a.input_bytes = 4 * (m * k + k * n);
  a.output = want.data();
  a.output_bytes = 4 * m * n;
  ASSERT_EQ(cpu.Find("matmul")->run_cpu(&a), PAAM_KERNEL_OK);
  EXPECT_LT(RelL2(quiet.data(), want.data(), m * n), 1e-5);
  b->DetachRegion(&lp.mem);
  b->DetachRegion(&hp.mem);
}

// A plugin kernel that holds the GPU in 2 ms waves for 300 ms: with its CUDA slices a more
// urgent request gets in within a few waves; run whole (a plugin without slices) it would wait
// for the rest of the 300 ms wave.
TEST_F(PreemptBackend, APluginsCudaSlicesLetAMoreUrgentRequestInBetween) {
  for (const char* kernel : {"hold", "hold_unsliced"}) {
    SCOPED_TRACE(kernel);
    auto b = Make(true);
    ASSERT_NE(b, nullptr);
    HostRegion lp(0, 8), hp(8 * 1024, 4 * 1024);
    ASSERT_TRUE(b->AttachRegion(&lp.mem).ok());
    ASSERT_TRUE(b->AttachRegion(&hp.mem).ok());
    ASSERT_TRUE(b->PrepareWorker(0, 0, 0, nullptr).ok());
    Status lp_status;
    std::thread low([&] {
      ASSERT_TRUE(b->PrepareWorker(0, 1, 0, nullptr).ok());
      lp_status = RunOn(b.get(), &lp, kernel, {2, 300}, 0, 1);
    });
    std::this_thread::sleep_for(milliseconds(40));
    const uint64_t t0 = NowNs();
    Status hs = RunOn(b.get(), &hp, "vector_add", {1024}, 8 * 1024, 0);
    const double hp_ms = MsSince(t0);
    low.join();
    ASSERT_TRUE(hs.ok()) << hs.ToString();
    ASSERT_TRUE(lp_status.ok()) << lp_status.ToString();
    if (std::string(kernel) == "hold") {
      EXPECT_LT(hp_ms, 60.0) << "waited past a few 2 ms slices";
    } else {
      EXPECT_GT(hp_ms, 150.0) << "a kernel without slices is expected to hold the GPU (control)";
    }
    b->DetachRegion(&lp.mem);
    b->DetachRegion(&hp.mem);
  }
}

// Holding back: a level-1 request does not start while level 0 runs a kernel (which leaves it
// room on the GPU), nor while the server says level 0 has work queued; cancelled while it
// waits, it ends cancelled.
TEST_F(PreemptBackend, ALowerLevelsRequestWaitsWhileMoreUrgentWorkRunsOrIsQueued) {
  auto b = Make(true);
  ASSERT_NE(b, nullptr);
  HostRegion lp(0, 8), hp(0, 8);
  ASSERT_TRUE(b->AttachRegion(&lp.mem).ok());
  ASSERT_TRUE(b->AttachRegion(&hp.mem).ok());
  ASSERT_TRUE(b->PrepareWorker(0, 1, 0, nullptr).ok());
  DeviceTimes ht, lt;
  std::thread high([&] {
    ASSERT_TRUE(b->PrepareWorker(0, 0, 0, nullptr).ok());
    EXPECT_TRUE(RunOn(b.get(), &hp, "spin", {100'000'000, 0, 25}, 0, 0, &ht).ok());
  });
  std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(RunOn(b.get(), &lp, "spin", {1'000'000, 0, 25}, 0, 1, &lt).ok());
  high.join();
  EXPECT_GE(lt.start_ns + 1'000'000, ht.end_ns) << "the level-1 kernel started while level 0 ran";

  // Queued more urgent work (the server's depth): held back until it is gone.
  std::atomic<bool> queued{true};
  b->SetQueueDepth([&](int unit, int level) -> uint32_t { return unit == 0 && level == 0 && queued.load() ? 1 : 0; });
  std::thread dequeue([&] {
    std::this_thread::sleep_for(milliseconds(60));
    queued = false;
  });
  uint64_t t0 = NowNs();
  ASSERT_TRUE(RunOn(b.get(), &lp, "spin", {1'000'000, 0, 0}, 0, 1).ok());
  EXPECT_GE(MsSince(t0), 50.0);
  dequeue.join();

  // Cancelled while held back.
  queued = true;
  std::atomic<uint64_t>* word = b->CancelWord(0, 1, 0);
  ASSERT_NE(word, nullptr);
  word->store(0);
  std::thread cancel([&] {
    std::this_thread::sleep_for(milliseconds(20));
    word->store(7);
  });
  Status s = RunOn(b.get(), &lp, "spin", {1'000'000, 0, 0}, 0, 1, nullptr, word, 7);
  cancel.join();
  EXPECT_EQ(s.code(), Errc::kCancelled) << s.ToString();
  b->SetQueueDepth({});
  b->DetachRegion(&lp.mem);
  b->DetachRegion(&hp.mem);
}

// A request cancelled while paused leaves its lane clean: the next request there (a plugin
// kernel, which never clears the pause itself) runs once, not again as if it had paused.
TEST_F(PreemptBackend, ACancelWhilePausedLeavesNoPauseForTheLanesNextRequest) {
  auto b = Make(true);
  ASSERT_NE(b, nullptr);
  HostRegion lp(0, 8), hp(0, 8);
  ASSERT_TRUE(b->AttachRegion(&lp.mem).ok());
  ASSERT_TRUE(b->AttachRegion(&hp.mem).ok());
  std::atomic<uint64_t>* word = b->CancelWord(0, 1, 0);
  ASSERT_NE(word, nullptr);
  word->store(0);
  Status lp_status;
  std::thread low([&] {
    ASSERT_TRUE(b->PrepareWorker(0, 1, 0, nullptr).ok());
    lp_status = RunOn(b.get(), &lp, "spin", {300'000'000, 0, 0}, 0, 1, nullptr, word, 9);
  });
  std::this_thread::sleep_for(milliseconds(30));
  std::thread high([&] {
    ASSERT_TRUE(b->PrepareWorker(0, 0, 0, nullptr).ok());
    EXPECT_TRUE(RunOn(b.get(), &hp, "spin", {150'000'000, 0, 25}, 0, 0).ok());
  });
  std::this_thread::sleep_for(milliseconds(60));  // the long spin is paused now
  word->store(9);
  low.join();
  high.join();
  EXPECT_EQ(lp_status.code(), Errc::kCancelled) << lp_status.ToString();
  word->store(0);
  g_count_runs = 0;
  std::thread again([&] {
    ASSERT_TRUE(b->PrepareWorker(0, 1, 0, nullptr).ok());
    EXPECT_TRUE(RunOn(b.get(), &lp, "count", {}, 0, 1).ok());
  });
  again.join();
  EXPECT_EQ(g_count_runs.load(), 1);
  b->DetachRegion(&lp.mem);
  b->DetachRegion(&hp.mem);
}

// Without --gpu-preempt nothing waits: the level-1 kernel runs beside the level-0 one.
TEST_F(PreemptBackend, WithoutPreemptionALowerLevelRunsBesideAMoreUrgentOne) {
  auto b = Make(false);
  ASSERT_NE(b, nullptr);
  HostRegion lp(0, 8), hp(0, 8);
  ASSERT_TRUE(b->AttachRegion(&lp.mem).ok());
  ASSERT_TRUE(b->AttachRegion(&hp.mem).ok());
  ASSERT_TRUE(b->PrepareWorker(0, 1, 0, nullptr).ok());
  DeviceTimes ht, lt;
  std::thread high([&] {
    ASSERT_TRUE(b->PrepareWorker(0, 0, 0, nullptr).ok());
    EXPECT_TRUE(RunOn(b.get(), &hp, "spin", {100'000'000, 0, 25}, 0, 0, &ht).ok());
  });
  std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(RunOn(b.get(), &lp, "spin", {1'000'000, 0, 25}, 0, 1, &lt).ok());
  high.join();
  EXPECT_LT(lt.end_ns, ht.end_ns);
  b->DetachRegion(&lp.mem);
  b->DetachRegion(&hp.mem);
}

}  // namespace
}  // namespace paam
