// kernels/builtin_cpu.cc — CPU implementations of the built-in kernels.
// The CUDA backend attaches GPU versions of the same names (backend/cuda/).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "kernels/preemption.h"
#include "kernels/registry.h"

namespace paam {
namespace {

constexpr uint64_t kMaxElements = uint64_t{1} << 40;

template <typename... Args>
int Fail(char* err, size_t len, const char* fmt, Args... args) {
  std::snprintf(err, len, fmt, static_cast<unsigned long long>(args)...);
  return PAAM_KERNEL_EINVAL;
}

// vector_add: (a: f32[n], b: f32[n]) -> f32[n]; params: n
int PlanVectorAdd(const uint64_t p[PAAM_MAX_PARAMS], uint64_t in, uint64_t* out, char* err, size_t len) {
  uint64_t n = p[0];
  if (n == 0 || n > kMaxElements) return Fail(err, len, "n must be 1..2^40, got %llu", n);
  if (in != 2 * n * sizeof(float)) return Fail(err, len, "input must be 2*n floats (%llu bytes), got %llu", 2 * n * 4, in);
  *out = n * sizeof(float);
  return PAAM_KERNEL_OK;
}
int RunVectorAdd(const paam_kernel_args* a) {
  const uint64_t n = a->params[0];
  const auto* x = static_cast<const float*>(a->input);
  const float* y = x + n;
  auto* z = static_cast<float*>(a->output);
  for (uint64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
  return PAAM_KERNEL_OK;
}

// matmul: (A: f32[m*k], B: f32[k*n]) -> f32[m*n], row-major; params: m, k, n
int PlanMatmul(const uint64_t p[PAAM_MAX_PARAMS], uint64_t in, uint64_t* out, char* err, size_t len) {
  uint64_t m = p[0], k = p[1], n = p[2];
  if (m == 0 || k == 0 || n == 0 || m > (1u << 20) || k > (1u << 20) || n > (1u << 20)) {
    return Fail(err, len, "m, k, n must be 1..2^20, got %llu, %llu, %llu", m, k, n);
  }
  uint64_t want = (m * k + k * n) * sizeof(float);
  if (in != want) return Fail(err, len, "input must be m*k+k*n floats (%llu bytes), got %llu", want, in);
  *out = m * n * sizeof(float);
  return PAAM_KERNEL_OK;
}
// Sliced as the CUDA version is: a preemption point (kernels/preemption.h) after every band of
// rows worth about kMatmulSliceMacs multiply-adds (tens of microseconds).
constexpr uint64_t kMatmulSliceMacs = uint64_t{1} << 16;
int RunMatmul(const paam_kernel_args* a) {
  const uint64_t m = a->params[0], k = a->params[1], n = a->params[2];
  const auto* A = static_cast<const float*>(a->input);
  const float* B = A + m * k;
  auto* C = static_cast<float*>(a->output);
  for (uint64_t i = 0; i < m * n; ++i) C[i] = 0.0f;
  const uint64_t band = std::max<uint64_t>(1, kMatmulSliceMacs / (k * n));
  for (uint64_t i = 0; i < m; ++i) {
    if (i % band == band - 1 && CpuPreemptionPoint()) return kCpuKernelStopped;
    for (uint64_t kk = 0; kk < k; ++kk) {
      const float aik = A[i * k + kk];
      const float* brow = B + kk * n;
      float* crow = C + i * n;
      for (uint64_t j = 0; j < n; ++j) crow[j] += aik * brow[j];
    }
  }
  return PAAM_KERNEL_OK;
}

// reduction: (x: f32[n]) -> f32[1] (sum, accumulated in double); params: n
int PlanReduction(const uint64_t p[PAAM_MAX_PARAMS], uint64_t in, uint64_t* out, char* err, size_t len) {
  uint64_t n = p[0];
  if (n == 0 || n > kMaxElements) return Fail(err, len, "n must be 1..2^40, got %llu", n);
  if (in != n * sizeof(float)) return Fail(err, len, "input must be n floats (%llu bytes), got %llu", n * 4, in);
  *out = sizeof(float);
  return PAAM_KERNEL_OK;
}
int RunReduction(const paam_kernel_args* a) {
  const uint64_t n = a->params[0];
  const auto* x = static_cast<const float*>(a->input);
  double s = 0;
  for (uint64_t i = 0; i < n; ++i) s += x[i];
  *static_cast<float*>(a->output) = static_cast<float>(s);
  return PAAM_KERNEL_OK;
}

// histogram: (x: u8[n]) -> u32[256]; params: n
int PlanHistogram(const uint64_t p[PAAM_MAX_PARAMS], uint64_t in, uint64_t* out, char* err, size_t len) {
  uint64_t n = p[0];
  if (n == 0 || n > kMaxElements) return Fail(err, len, "n must be 1..2^40, got %llu", n);
  if (in != n) return Fail(err, len, "input must be n bytes (%llu), got %llu", n, in);
  *out = 256 * sizeof(uint32_t);
  return PAAM_KERNEL_OK;
}
int RunHistogram(const paam_kernel_args* a) {
  const uint64_t n = a->params[0];
  const auto* x = static_cast<const uint8_t*>(a->input);
  auto* h = static_cast<uint32_t*>(a->output);
  std::memset(h, 0, 256 * sizeof(uint32_t));
  for (uint64_t i = 0; i < n; ++i) ++h[x[i]];
  return PAAM_KERNEL_OK;
}

// spin: () -> u64 (elapsed ns); params: duration_ns, optional slice_ns and width_pct (the CUDA
// version's block slice and share of the GPU's block slots, 0-100; a CPU core has no width, so
// both are checked and otherwise unused here). Occupies the device for the duration.
// On the CPU it counts the thread's own CPU time, so a spin preempted by a higher bucket
// still executes for its full duration (as a GPU kernel would), and it passes a preemption
// point every kCpuPreemptionSliceNs of that time (kernels/preemption.h), where it also stops
// when its request is cancelled.
int PlanSpin(const uint64_t p[PAAM_MAX_PARAMS], uint64_t in, uint64_t* out, char* err, size_t len) {
  if (p[0] > 60'000'000'000ull) return Fail(err, len, "duration must be at most 60 s, got %llu ns", p[0]);
  if (p[2] > 100) return Fail(err, len, "width must be a percentage of the device (0-100), got %llu", p[2]);
  if (in != 0) return Fail(err, len, "spin takes no input, got %llu bytes", in);
  *out = sizeof(uint64_t);
  return PAAM_KERNEL_OK;
}
int RunSpin(const paam_kernel_args* a) {
  const uint64_t duration = a->params[0];
  const uint64_t wall0 = NowNs();
  const uint64_t cpu0 = ThreadCpuNs();
  uint64_t next_point = cpu0 + kCpuPreemptionSliceNs;
  for (uint64_t now = cpu0; now - cpu0 < duration; now = ThreadCpuNs()) {
    if (now >= next_point) {
      if (CpuPreemptionPoint()) return kCpuKernelStopped;
      next_point = ThreadCpuNs() + kCpuPreemptionSliceNs;
    }
  }
  *static_cast<uint64_t*>(a->output) = NowNs() - wall0;
  return PAAM_KERNEL_OK;
}

// noop: (x: u8[any]) -> u8[params[0]]; does nothing (the output area is left as it is).
// The request-overhead benchmark uses it to measure the path without a kernel.
int PlanNoop(const uint64_t p[PAAM_MAX_PARAMS], uint64_t, uint64_t* out, char*, size_t) {
  *out = p[0];
  return PAAM_KERNEL_OK;
}
int RunNoop(const paam_kernel_args*) { return PAAM_KERNEL_OK; }

const paam_kernel kBuiltins[] = {
    {"vector_add", "(a: f32[n], b: f32[n]) -> f32[n]; params: n", PlanVectorAdd, RunVectorAdd, nullptr},
    {"matmul", "(A: f32[m,k], B: f32[k,n]) -> f32[m,n]; params: m, k, n", PlanMatmul, RunMatmul, nullptr},
    {"reduction", "(x: f32[n]) -> f32 (sum); params: n", PlanReduction, RunReduction, nullptr},
    {"histogram", "(x: u8[n]) -> u32[256]; params: n", PlanHistogram, RunHistogram, nullptr},
    {"spin", "() -> u64 elapsed_ns; params: duration_ns[, slice_ns, width_pct]", PlanSpin, RunSpin, nullptr},
    {"noop", "(x: u8[any]) -> u8[out_bytes] (untouched); params: out_bytes", PlanNoop, RunNoop, nullptr},
};

thread_local CpuPreemptionHook tls_hook = nullptr;
thread_local void* tls_hook_context = nullptr;

}  // namespace

void SetCpuPreemptionHook(CpuPreemptionHook hook, void* context) {
  tls_hook = hook;
  tls_hook_context = context;
}

bool CpuPreemptionPoint() { return tls_hook != nullptr && tls_hook(tls_hook_context); }

const paam_kernel* BuiltinKernels(uint32_t* count) {
  *count = static_cast<uint32_t>(sizeof(kBuiltins) / sizeof(kBuiltins[0]));
  return kBuiltins;
}

}  // namespace paam
