// backend/cuda/gpu_bench.cc — paam_gpu_bench: GPU measurements that need only the kernels.
//
//   paam_gpu_bench info
//   paam_gpu_bench preempt [--kernels matmul,reduction,vector_add,histogram,spin] [--iters N]
//                          [--warmup N] [--lead-us US | --random-lead] [--slicing off|on|both]
//                          [--slice-us US] [--device D] [--json FILE]
//   paam_gpu_bench kappa   [--slices-us 5,10,20,50,100] [--iters N] [--lp-ms MS] [--lead-us US]
//                          [--device D] [--json FILE]
//   paam_gpu_bench backend [--iters N] [--json FILE]
//
// preempt is the PAAM paper's Table I: in one context, two streams at the lowest and highest
// priority, two identical buffer sets; the kernel is launched on the low-priority stream, then
// (after --lead-us of host busy-waiting, 0 as in the paper, or with --random-lead a uniform
// random time within the low-priority kernel's run alone) the same kernel on the high-priority
// stream (spin: a --spin-us one behind a --spin-lp-us one). The high-priority kernel's
// event-timed execution minus the same kernel's time alone on that stream (measured just
// before, each iteration) is the preemption delay. --slicing on runs the low-priority kernel
// preemptible as paamd --gpu-preempt does (cuda_preempt.h): the urgent word goes up right
// before the high-priority launch and down after it, and the low-priority kernel, once it
// paused, is resumed until done; the low-priority kernel alone, sliced or not, gives what the
// slicing costs its throughput. kappa measures the same delay for a one-block kernel arriving while
// `spin` (with a given block slice) holds every block slot of the GPU.
// backend times Backend::Run of the CUDA backend (no server, no IPC) for a one-block
// vector_add at level 0, per wait mode (BackendOptions::cuda_wait spin|poll|block|nap), alone and while the
// lowest level's best-effort lanes keep running spin; "raw" is the same copy-in, kernel,
// copy-out and cudaStreamSynchronize without the backend.
// Results: a table on stdout; raw per-iteration figures in the JSON file.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <atomic>
#include <memory>
#include <thread>

#include <sys/mman.h>

#include <nlohmann/json.hpp>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_preempt.h"
#include "common/cli.h"
#include "common/clock.h"

namespace {

#define CHECK_CUDA(expr)                                                                           \
  do {                                                                                             \
    cudaError_t e_ = (expr);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

using Clock = std::chrono::steady_clock;

void BusyWaitUs(double us) {
  if (us <= 0) return;
  auto end = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
  while (Clock::now() < end) {
  }
}

struct Args {
  std::string command;
  std::vector<std::string> kernels = {"matmul", "reduction", "vector_add", "histogram"};
  std::string slicing = "off";
  bool random_lead = false;
  double slice_us = 20;
  double spin_us = 200;
  double spin_lp_us = 2000;
  std::vector<double> slices_us = {5, 10, 20, 50, 100};
  int iters = 10000;
  int warmup = 200;
  double lead_us = 0;
  double lp_ms = 2.0;
  int device = 0;
  uint64_t matmul = 1024;
  uint64_t vector_n = uint64_t{1} << 24;
  uint64_t reduction_n = uint64_t{1} << 24;
  uint64_t histogram_n = uint64_t{1} << 26;
  std::string json;
};

constexpr int kUsageStatus = 64;

Args Parse(int argc, char** argv) {
  Args a;
  CLI::App app("GPU measurements that need only the kernels: info (the device), preempt (the\n"
               "paper's Table I: preemption delay between stream priorities), kappa (the delay\n"
               "of a one-block kernel behind spin, per spin block length), backend (the CUDA\n"
               "backend's request round trip per wait mode, no server). A table on stdout;\n"
               "every figure in the --json file.",
               "paam_gpu_bench");
  paam::cli::Setup(app);
  // (the validators' own descriptions left out of the help: the options' texts say it)
  app.add_option("command", a.command, "info, preempt, kappa or backend")
      ->type_name("")
      ->required()
      ->check(CLI::IsMember({"info", "preempt", "kappa", "backend"}).description(""));
  app.add_option("--kernels", a.kernels, "preempt: kernels to time (default: matmul,reduction,vector_add,histogram;\n"
                                         "spin too)")
      ->type_name("LIST")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember({"matmul", "reduction", "vector_add", "histogram", "spin"}).description(""));
  app.add_option("--slicing", a.slicing, "preempt: the low-priority kernel unsliced (off), preemptible in slices\n"
                                         "(on), or both in turn (default: off)")
      ->type_name("off|on|both")
      ->check(CLI::IsMember({"off", "on", "both"}).description(""));
  app.add_option("--slice-us", a.slice_us, "preempt --slicing: the slice length (default: 20, as paamd)")
      ->type_name("US")
      ->check(CLI::Range(1.0, 10000.0).description(""));
  app.add_flag("--random-lead", a.random_lead,
               "preempt: the high-priority kernel comes at a random time within the\n"
               "low-priority one's run alone (default: after --lead-us)");
  app.add_option("--spin-us", a.spin_us, "preempt: the high-priority spin's length (default: 200)")
      ->type_name("US")
      ->check(CLI::Range(1.0, 1e7).description(""));
  app.add_option("--spin-lp-us", a.spin_lp_us, "preempt: the low-priority spin's length (default: 2000)")
      ->type_name("US")
      ->check(CLI::Range(1.0, 1e7).description(""));
  app.add_option("--iters", a.iters, "measured iterations (default: 10000)")->type_name("N")->check(paam::cli::AtLeast(1));
  app.add_option("--warmup", a.warmup, "iterations before those, not measured (default: 200)")
      ->type_name("N")
      ->check(paam::cli::AtLeast(0));
  app.add_option("--lead-us", a.lead_us, "host busy-wait between the low- and high-priority launch (default: 0)")
      ->type_name("US");
  app.add_option("--slices-us", a.slices_us, "kappa: spin's block lengths (default: 5,10,20,50,100)")
      ->type_name("LIST")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_option("--lp-ms", a.lp_ms, "kappa: length of the low-priority spin (default: 2)")->type_name("MS");
  app.add_option("--device", a.device, "GPU ordinal (default: 0)")->type_name("D");
  app.add_option("--matmul", a.matmul, "preempt: matmul size N (NxN times NxN; default: 1024)")->type_name("N")->check(paam::cli::AtLeast(1));
  app.add_option("--vector-n", a.vector_n, "preempt: vector_add elements (default: 2^24)")->type_name("N")->check(paam::cli::AtLeast(1));
  app.add_option("--reduction-n", a.reduction_n, "preempt: reduction elements (default: 2^24)")->type_name("N")->check(paam::cli::AtLeast(1));
  app.add_option("--histogram-n", a.histogram_n, "preempt: histogram bytes (default: 2^26)")->type_name("N")->check(paam::cli::AtLeast(1));
  app.add_option("--json", a.json, "write every figure, raw series included, into FILE")->type_name("FILE");
  paam::cli::ParseOrExit(app, argc, argv, kUsageStatus);
  return a;
}

// One kernel invocation on its own device buffers.
struct Job {
  std::function<int(const paam_kernel_args*)> run;
  paam_kernel_args args{};
  void* d_in = nullptr;
  void* d_out = nullptr;

  void Launch(cudaStream_t s) {
    args.stream = s;
    if (run(&args) != PAAM_KERNEL_OK) {
      std::fprintf(stderr, "kernel launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
      std::exit(2);
    }
  }
  void Free() {
    cudaFree(d_in);
    cudaFree(d_out);
  }
};

// A job for `name` with random input (fresh per job), sized by the options; `low`: the
// low-priority one (only spin's length differs).
Job MakeJob(const std::string& name, const Args& a, std::mt19937_64* rng, std::string* shape, bool low = false) {
  Job j;
  j.args.device = PAAM_DEVICE_CUDA;
  uint64_t in = 0, out = 0;
  std::vector<uint8_t> host;
  auto floats = [&](uint64_t n) {
    host.resize(n * 4);
    std::uniform_real_distribution<float> d(-1, 1);
    auto* f = reinterpret_cast<float*>(host.data());
    for (uint64_t i = 0; i < n; ++i) f[i] = d(*rng);
  };
  if (name == "matmul") {
    const uint64_t n = a.matmul;
    j.run = paam::cuda::MatmulCuda;
    j.args.params[0] = j.args.params[1] = j.args.params[2] = n;
    floats(2 * n * n);
    in = 2 * n * n * 4;
    out = n * n * 4;
    *shape = std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(n);
  } else if (name == "vector_add") {
    j.run = paam::cuda::VectorAddCuda;
    j.args.params[0] = a.vector_n;
    floats(2 * a.vector_n);
    in = 2 * a.vector_n * 4;
    out = a.vector_n * 4;
    *shape = "n=" + std::to_string(a.vector_n);
  } else if (name == "reduction") {
    j.run = paam::cuda::ReductionCuda;
    j.args.params[0] = a.reduction_n;
    floats(a.reduction_n);
    in = a.reduction_n * 4;
    out = 4;
    *shape = "n=" + std::to_string(a.reduction_n);
  } else if (name == "histogram") {
    j.run = paam::cuda::HistogramCuda;
    j.args.params[0] = a.histogram_n;
    host.resize(a.histogram_n);
    for (auto& b : host) b = static_cast<uint8_t>((*rng)() >> 17);
    in = a.histogram_n;
    out = 1024;
    *shape = "n=" + std::to_string(a.histogram_n);
  } else if (name == "spin") {
    const double us = low ? a.spin_lp_us : a.spin_us;
    j.run = paam::cuda::SpinCuda;
    j.args.params[0] = static_cast<uint64_t>(us * 1000);
    out = 8;
    *shape = std::to_string(static_cast<uint64_t>(us)) + " us";
  } else {
    std::fprintf(stderr, "unknown kernel '%s'\n", name.c_str());
    std::exit(kUsageStatus);
  }
  CHECK_CUDA(cudaMalloc(&j.d_in, std::max<uint64_t>(in, 256)));
  CHECK_CUDA(cudaMalloc(&j.d_out, std::max<uint64_t>(out, 256)));
  if (in > 0) CHECK_CUDA(cudaMemcpy(j.d_in, host.data(), in, cudaMemcpyHostToDevice));
  j.args.input = j.d_in;
  j.args.input_bytes = in;
  j.args.output = j.d_out;
  j.args.output_bytes = out;
  return j;
}

struct Stats {
  double mean = 0, max = 0, min = 0, std = 0, p50 = 0, p99 = 0;
};
Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / v.size();
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(sq / (v.size() - 1)) : 0;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.p50 = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, static_cast<size_t>(v.size() * 0.99))];
  return s;
}

using Json = nlohmann::ordered_json;

// x to `digits` decimals: the figures are timer readings, the rest would be noise.
double Round(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

Json StatsJson(const Stats& s) {
  return {{"mean", Round(s.mean, 3)}, {"max", Round(s.max, 3)}, {"min", Round(s.min, 3)},
          {"std", Round(s.std, 3)},   {"p50", Round(s.p50, 3)}, {"p99", Round(s.p99, 3)}};
}

Json ArrayJson(const std::vector<double>& v) {
  Json out = Json::array();
  for (double x : v) out.push_back(Round(x, 2));
  return out;
}

Json DeviceJson(int device) {
  cudaDeviceProp p;
  CHECK_CUDA(cudaGetDeviceProperties(&p, device));
  int least = 0, greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  return {{"index", device},
          {"name", p.name},
          {"sms", p.multiProcessorCount},
          {"cc", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"stream_priority_least", least},
          {"stream_priority_greatest", greatest},
          {"driver", driver},
          {"runtime", runtime},
          {"spin_slots", paam::cuda::SpinSlots(device)}};
}

void WriteJson(const std::string& path, const Json& json) {
  if (path.empty()) return;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fputs((json.dump() + "\n").c_str(), f);  // one line: raw figures, for paam bench gpu-*
  std::fclose(f);
}

struct Streams {
  cudaStream_t lp = nullptr, hp = nullptr;
  int least = 0, greatest = 0;
  Streams() {
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK_CUDA(cudaStreamCreateWithPriority(&lp, cudaStreamNonBlocking, least));
    CHECK_CUDA(cudaStreamCreateWithPriority(&hp, cudaStreamNonBlocking, greatest));
  }
  ~Streams() {
    cudaStreamDestroy(lp);
    cudaStreamDestroy(hp);
  }
};

float Elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

// The low-priority side of preempt: `job` on `lane` 0 of `words`, unsliced or preemptible,
// resumed until it is done. Records `end` after each launch. Returns the pauses.
int RunLow(Job* job, cudaStream_t s, paam::CudaPreemptWords* words, bool sliced, double slice_us, cudaEvent_t end,
           const std::function<void()>& between) {
  const uint64_t slice_ns = static_cast<uint64_t>(slice_us * 1000);
  if (sliced) paam::cuda::SetCudaPreempt(words->Kernels(0, 1, slice_ns, false));
  job->Launch(s);
  paam::cuda::SetCudaPreempt({});
  CHECK_CUDA(cudaEventRecord(end, s));
  between();
  CHECK_CUDA(cudaStreamSynchronize(s));
  int pauses = 0;
  while (sliced && words->Paused(0)) {
    ++pauses;
    paam::cuda::SetCudaPreempt(words->Kernels(0, 1, slice_ns, true));
    job->Launch(s);
    paam::cuda::SetCudaPreempt({});
    CHECK_CUDA(cudaEventRecord(end, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  return pauses;
}

int Preempt(const Args& a) {
  Streams st;
  cudaEvent_t hs, he, ls, le;
  for (cudaEvent_t* e : {&hs, &he, &ls, &le}) CHECK_CUDA(cudaEventCreate(e));
  paam::CudaPreemptWords words;  // level 1's word and one lane, as paamd's for the lowest bucket
  if (!words.Allocate(2, 1).ok()) {
    std::fprintf(stderr, "cannot allocate the preemption words\n");
    return 2;
  }
  std::atomic<uint64_t>* urgent = words.Word(1);
  std::mt19937_64 rng(7);
  std::vector<bool> modes;
  if (a.slicing != "on") modes.push_back(false);
  if (a.slicing != "off") modes.push_back(true);
  Json json = {{"bench", "preempt"}, {"device", DeviceJson(a.device)}, {"iters", a.iters}, {"lead_us", a.lead_us},
               {"random_lead", a.random_lead}, {"slice_us", a.slice_us}, {"kernels", Json::object()}};
  std::printf("preemption delay, %d iterations, LP→HP lead %s, slice %.0f us (us)\n", a.iters,
              a.random_lead ? "random within the LP kernel" : (std::to_string(a.lead_us) + " us").c_str(), a.slice_us);
  std::printf("%-11s %-16s %-7s %9s %9s %9s %9s %9s %9s %9s %8s %7s\n", "kernel", "shape", "slicing", "alone",
              "with_lp", "d_mean", "d_p99", "d_max", "d_std", "lp_alone", "hp_first", "paused");
  for (const std::string& name : a.kernels) {
    std::string shape, lp_shape;
    Job hp = MakeJob(name, a, &rng, &shape);
    Job lp = MakeJob(name, a, &rng, &lp_shape, /*low=*/true);
    auto nothing = [] {};
    // The random lead's range: the low-priority kernel's time alone, unsliced.
    double lead_max = 0;
    for (int i = 0; i < 20 && a.random_lead; ++i) {
      CHECK_CUDA(cudaEventRecord(ls, st.lp));
      RunLow(&lp, st.lp, &words, false, a.slice_us, le, nothing);
      lead_max = std::max(lead_max, Elapsed(ls, le) * 1e3);
    }
    std::uniform_real_distribution<double> lead_of(0.0, lead_max);
    Json& jk = json["kernels"][name] = {{"shape", shape}, {"lp_shape", lp_shape}, {"lead_max_us", Round(lead_max, 2)},
                                        {"modes", Json::object()}};
    for (const bool sliced : modes) {
      std::vector<double> alone, contended, delay, lp_alone, lp_with;
      int hp_first = 0, paused = 0;
      for (int it = -a.warmup; it < a.iters; ++it) {
        // alone, on the high-priority stream
        CHECK_CUDA(cudaEventRecord(hs, st.hp));
        hp.Launch(st.hp);
        CHECK_CUDA(cudaEventRecord(he, st.hp));
        CHECK_CUDA(cudaStreamSynchronize(st.hp));
        const double t_alone = Elapsed(hs, he) * 1e3;
        // the low-priority kernel alone, in this mode: its throughput
        CHECK_CUDA(cudaEventRecord(ls, st.lp));
        RunLow(&lp, st.lp, &words, sliced, a.slice_us, le, nothing);
        const double t_lp_alone = Elapsed(ls, le) * 1e3;
        // low-priority first, then the same kernel at high priority
        const double lead = a.random_lead ? lead_of(rng) : a.lead_us;
        CHECK_CUDA(cudaEventRecord(ls, st.lp));
        const int pauses = RunLow(&lp, st.lp, &words, sliced, a.slice_us, le, [&] {
          BusyWaitUs(lead);
          if (sliced) urgent->store(1, std::memory_order_seq_cst);  // as a top-bucket Run enters
          CHECK_CUDA(cudaEventRecord(hs, st.hp));
          hp.Launch(st.hp);
          CHECK_CUDA(cudaEventRecord(he, st.hp));
          CHECK_CUDA(cudaStreamSynchronize(st.hp));
          if (sliced) urgent->store(0, std::memory_order_seq_cst);
        });
        if (it < 0) continue;
        const double t_with = Elapsed(hs, he) * 1e3;
        alone.push_back(t_alone);
        contended.push_back(t_with);
        delay.push_back(t_with - t_alone);
        lp_alone.push_back(t_lp_alone);
        lp_with.push_back(Elapsed(ls, le) * 1e3);
        if (Elapsed(le, he) < 0) ++hp_first;  // HP ended before LP did
        if (pauses > 0) ++paused;
      }
      const Stats sa = Summarize(alone), sc = Summarize(contended), sd = Summarize(delay);
      const Stats sl = Summarize(lp_alone), sw = Summarize(lp_with);
      const char* mode = sliced ? "on" : "off";
      std::printf("%-11s %-16s %-7s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %7.1f%% %6.1f%%\n", name.c_str(),
                  shape.c_str(), mode, sa.mean, sc.mean, sd.mean, sd.p99, sd.max, sd.std, sl.mean,
                  100.0 * hp_first / a.iters, 100.0 * paused / a.iters);
      jk["modes"][mode] = {{"alone_us", StatsJson(sa)},
                           {"with_lp_us", StatsJson(sc)},
                           {"delay_us", StatsJson(sd)},
                           {"lp_alone_us", StatsJson(sl)},
                           {"lp_with_hp_us", StatsJson(sw)},
                           {"hp_finished_first", Round(static_cast<double>(hp_first) / a.iters, 6)},
                           {"lp_paused", Round(static_cast<double>(paused) / a.iters, 6)},
                           {"raw_delay_us", ArrayJson(delay)}};
    }
    if (jk["modes"].contains("off") && jk["modes"].contains("on")) {
      const double off = jk["modes"]["off"]["lp_alone_us"]["mean"], on = jk["modes"]["on"]["lp_alone_us"]["mean"];
      jk["lp_slicing_cost"] = Round(off > 0 ? on / off - 1.0 : 0.0, 4);  // of the LP kernel's time alone
      std::printf("%-11s slicing costs the low-priority kernel %+.1f%% of its time alone\n", name.c_str(),
                  100.0 * (off > 0 ? on / off - 1.0 : 0.0));
    }
    hp.Free();
    lp.Free();
  }
  WriteJson(a.json, json);
  return 0;
}

int Kappa(const Args& a) {
  Streams st;
  cudaEvent_t hs, he;
  CHECK_CUDA(cudaEventCreate(&hs));
  CHECK_CUDA(cudaEventCreate(&he));
  std::mt19937_64 rng(11);
  Args tiny = a;
  tiny.vector_n = 1024;  // one block
  std::string shape;
  Job hp = MakeJob("vector_add", tiny, &rng, &shape);
  unsigned long long* d_spin = nullptr;
  CHECK_CUDA(cudaMalloc(&d_spin, 256));
  paam_kernel_args spin{};
  spin.device = PAAM_DEVICE_CUDA;
  spin.output = d_spin;
  spin.output_bytes = 8;
  spin.params[0] = static_cast<uint64_t>(a.lp_ms * 1e6);

  Json json = {{"bench", "kappa"}, {"device", DeviceJson(a.device)}, {"iters", a.iters},
               {"lead_us", a.lead_us}, {"lp_ms", a.lp_ms}, {"slices", Json::array()}};
  std::printf("kappa: one-block vector_add at top priority while spin (%.1f ms) holds the GPU, lead %.0f us\n",
              a.lp_ms, a.lead_us);
  std::printf("%9s %9s %9s %9s %9s %9s %11s\n", "slice_us", "alone", "d_mean", "d_max", "d_std", "d_p99",
              "spin_ms");
  for (double slice_us : a.slices_us) {
    spin.params[1] = static_cast<uint64_t>(slice_us * 1000);
    std::vector<double> delay, alone, spin_ms;
    for (int it = -std::min(a.warmup, 20); it < a.iters; ++it) {
      CHECK_CUDA(cudaEventRecord(hs, st.hp));
      hp.Launch(st.hp);
      CHECK_CUDA(cudaEventRecord(he, st.hp));
      CHECK_CUDA(cudaStreamSynchronize(st.hp));
      const double t_alone = Elapsed(hs, he) * 1e3;
      spin.stream = st.lp;
      if (paam::cuda::SpinCuda(&spin) != PAAM_KERNEL_OK) {
        std::fprintf(stderr, "spin launch failed\n");
        return 2;
      }
      BusyWaitUs(a.lead_us);
      CHECK_CUDA(cudaEventRecord(hs, st.hp));
      hp.Launch(st.hp);
      CHECK_CUDA(cudaEventRecord(he, st.hp));
      CHECK_CUDA(cudaStreamSynchronize(st.hp));
      CHECK_CUDA(cudaStreamSynchronize(st.lp));
      unsigned long long spin_ns = 0;
      CHECK_CUDA(cudaMemcpy(&spin_ns, d_spin, 8, cudaMemcpyDeviceToHost));
      if (it < 0) continue;
      const double t_with = Elapsed(hs, he) * 1e3;
      alone.push_back(t_alone);
      delay.push_back(t_with - t_alone);
      spin_ms.push_back(spin_ns / 1e6);
    }
    const Stats sd = Summarize(delay), sa = Summarize(alone), ss = Summarize(spin_ms);
    std::printf("%9.1f %9.2f %9.2f %9.2f %9.2f %9.2f %11.3f\n", slice_us, sa.mean, sd.mean, sd.max, sd.std, sd.p99,
                ss.mean);
    json["slices"].push_back({{"slice_us", Round(slice_us, 3)},
                              {"alone_us", StatsJson(sa)},
                              {"delay_us", StatsJson(sd)},
                              {"spin_ms", StatsJson(ss)},
                              {"raw_delay_us", ArrayJson(delay)}});
  }
  // spin alone: requested against measured (GPU clock), default slice
  Json& spin_alone = json["spin_alone"] = Json::array();
  std::printf("spin alone (default slice %.0f us): requested_ms measured_ms (mean of 20)\n",
              paam::cuda::kDefaultSpinSliceNs / 1e3);
  spin.params[1] = 0;
  for (double ms : {0.1, 1.0, 5.0, 10.0}) {
    spin.params[0] = static_cast<uint64_t>(ms * 1e6);
    std::vector<double> got;
    for (int i = 0; i < 21; ++i) {
      spin.stream = st.hp;
      if (paam::cuda::SpinCuda(&spin) != PAAM_KERNEL_OK) return 2;
      CHECK_CUDA(cudaStreamSynchronize(st.hp));
      unsigned long long ns = 0;
      CHECK_CUDA(cudaMemcpy(&ns, d_spin, 8, cudaMemcpyDeviceToHost));
      if (i > 0) got.push_back(ns / 1e6);
    }
    const Stats s = Summarize(got);
    std::printf("  %8.3f %10.4f (max %.4f)\n", ms, s.mean, s.max);
    spin_alone.push_back({{"requested_ms", Round(ms, 3)}, {"measured_ms", StatsJson(s)}});
  }
  hp.Free();
  cudaFree(d_spin);
  WriteJson(a.json, json);
  return 0;
}

// A page-aligned host region (like a client's) for Backend::Run.
struct BenchRegion {
  paam::RegionMemory mem;
  void* base = nullptr;
  uint64_t bytes = 0;
  BenchRegion(uint64_t in, uint64_t out) {
    bytes = (in + out + 4095) / 4096 * 4096 + 4096;
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    mem.base = base;
    mem.mapping_bytes = bytes;
    mem.input = base;
    mem.input_capacity = in;
    mem.output = static_cast<char*>(base) + (in + 63) / 64 * 64;
    mem.output_capacity = out;
  }
  ~BenchRegion() { munmap(base, bytes); }
};

int BackendOverhead(const Args& a) {
  const uint64_t n = 1024;
  Json json = {{"bench", "backend"}, {"device", DeviceJson(a.device)}, {"iters", a.iters},
               {"kernel", "vector_add n=1024"}, {"modes", Json::array()}};
  std::printf("CUDA backend Run() round trip, one-block vector_add (8 KiB in, 4 KiB out) at level 0 (us)\n");
  std::printf("%-6s %-10s %9s %9s %9s %9s %9s\n", "wait", "load", "rt_p50", "rt_mean", "rt_p99", "rt_max",
              "kern_p50");
  auto emit = [&](const std::string& mode, const std::string& load, std::vector<double>& rt,
                  std::vector<double>& kern) {
    const Stats r = Summarize(rt), k = Summarize(kern);
    std::printf("%-6s %-10s %9.2f %9.2f %9.2f %9.2f %9.2f\n", mode.c_str(), load.c_str(), r.p50, r.mean, r.p99,
                r.max, k.p50);
    json["modes"].push_back({{"wait", mode}, {"load", load}, {"round_trip_us", StatsJson(r)}, {"kernel_us", StatsJson(k)}});
  };

  {  // raw: the same work without the backend
    Streams st;
    BenchRegion r(2 * n * 4, n * 4);
    CHECK_CUDA(cudaHostRegister(r.base, r.bytes, cudaHostRegisterPortable));
    void *din = nullptr, *dout = nullptr;
    CHECK_CUDA(cudaMalloc(&din, 2 * n * 4));
    CHECK_CUDA(cudaMalloc(&dout, n * 4));
    paam_kernel_args k{};
    k.input = din;
    k.input_bytes = 2 * n * 4;
    k.output = dout;
    k.output_bytes = n * 4;
    k.params[0] = n;
    k.stream = st.hp;
    std::vector<double> rt, kern;
    for (int it = -a.warmup; it < a.iters; ++it) {
      const uint64_t t0 = paam::NowNs();
      CHECK_CUDA(cudaMemcpyAsync(din, r.mem.input, 2 * n * 4, cudaMemcpyHostToDevice, st.hp));
      paam::cuda::VectorAddCuda(&k);
      CHECK_CUDA(cudaMemcpyAsync(r.mem.output, dout, n * 4, cudaMemcpyDeviceToHost, st.hp));
      CHECK_CUDA(cudaStreamSynchronize(st.hp));
      const uint64_t t1 = paam::NowNs();
      if (it >= 0) rt.push_back((t1 - t0) / 1e3);
    }
    kern.push_back(0);
    emit("raw", "alone", rt, kern);
    cudaFree(din);
    cudaFree(dout);
    cudaHostUnregister(r.base);
  }

  for (const char* mode : {"spin", "poll", "block", "nap"}) {
    paam::KernelRegistry registry = paam::KernelRegistry::WithBuiltins();
    paam::BackendOptions o;
    o.kind = "cuda";
    o.levels = 64;
    o.best_effort_lanes = 3;
    o.cuda_devices = std::to_string(a.device);
    o.cuda_wait = mode;
    auto created = paam::CreateCudaBackend(o, &registry);
    if (!created.ok()) {
      std::fprintf(stderr, "backend: %s\n", created.status().ToString().c_str());
      return 2;
    }
    std::unique_ptr<paam::Backend> b = std::move(created).value();
    const int low = b->Levels() - 1;
    BenchRegion r(2 * n * 4, n * 4);
    if (!b->AttachRegion(&r.mem).ok()) return 2;
    paam::KernelCall call;
    call.kernel = registry.Find("vector_add");
    call.region = &r.mem;
    call.input_bytes = 2 * n * 4;
    call.params[0] = n;
    if (!call.kernel->Plan(call.params, call.input_bytes, &call.output_bytes).ok()) return 2;
    std::string note;
    if (!b->PrepareWorker(0, 0, 0, &note).ok()) return 2;
    for (int loaded = 0; loaded < 2; ++loaded) {
      std::atomic<bool> stop{false};
      std::vector<std::thread> lp;
      if (loaded) {
        for (int lane = 0; lane < b->Lanes(low); ++lane) {
          lp.emplace_back([&, lane] {
            BenchRegion sr(0, 8);
            if (!b->AttachRegion(&sr.mem).ok() || !b->PrepareWorker(0, low, lane, nullptr).ok()) return;
            paam::KernelCall sc;
            sc.kernel = registry.Find("spin");
            sc.region = &sr.mem;
            sc.params[0] = 2'000'000;
            sc.output_bytes = 8;
            paam::DeviceTimes t;
            while (!stop.load()) b->Run(sc, low, lane, &t);
            b->DetachRegion(&sr.mem);
          });
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      std::vector<double> rt, kern;
      for (int it = -a.warmup; it < a.iters; ++it) {
        paam::DeviceTimes t;
        const uint64_t t0 = paam::NowNs();
        paam::Status s = b->Run(call, 0, 0, &t);
        const uint64_t t1 = paam::NowNs();
        if (!s.ok()) {
          std::fprintf(stderr, "run: %s\n", s.ToString().c_str());
          return 2;
        }
        if (it >= 0) {
          rt.push_back((t1 - t0) / 1e3);
          kern.push_back((t.end_ns - t.start_ns) / 1e3);
        }
        if (loaded) BusyWaitUs(50);  // arrive at random phases of the spin blocks
      }
      stop = true;
      for (auto& t : lp) t.join();
      emit(mode, loaded ? "3 lanes spin" : "alone", rt, kern);
    }
    b->DetachRegion(&r.mem);
  }
  WriteJson(a.json, json);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  std::string why;
  if (paam::CudaDeviceCount(&why) == 0) {
    std::fprintf(stderr, "paam_gpu_bench: %s\n", why.c_str());
    return 3;
  }
  CHECK_CUDA(cudaSetDevice(a.device));
  if (paam::cuda::PrepareCudaKernels(a.device) != 0) {
    std::fprintf(stderr, "paam_gpu_bench: cannot load kernels\n");
    return 2;
  }
  if (a.command == "info") {
    std::printf("%s\n", DeviceJson(a.device).dump().c_str());
    return 0;
  }
  if (a.command == "preempt") return Preempt(a);
  if (a.command == "kappa") return Kappa(a);
  if (a.command == "backend") return BackendOverhead(a);
  return kUsageStatus;  // not reached: Parse knows the commands
}
