// paamd — the PAAM accelerator server. `paamd --help` lists the options.
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "common/log.h"
#include "common/realtime.h"
#include "server/server.h"

namespace {

constexpr const char* kUsage = R"(usage: paamd [options]

Serves accelerator requests from local clients by chain priority.

  --socket PATH          Unix socket to listen on (default: $PAAM_SOCKET,
                         $XDG_RUNTIME_DIR/paam/paamd.sock or /tmp/paam-$UID/paamd.sock)
  --backend cpu|cuda     device backend (default: cpu)
  --buckets N            buckets = hardware priority levels to use (default: 1)
  --be-lanes N           concurrent kernels in the lowest bucket when there are several buckets
                         (default: 4 on cuda, as the paper's best-effort streams; 1 on cpu)
  --lanes LIST           concurrent kernels per bucket from the most urgent, e.g. 2 (bucket 0
                         runs two at a time: a chain whose branches submit side by side);
                         buckets not listed keep the rule above (1, the lowest --be-lanes)
  --device-cpu N         cpu backend: core that plays the device (default: last core; -2: none)
  --cuda-devices LIST    cuda backend: GPUs to serve, e.g. 0,1 (default: all)
  --cuda-wait MODE       cuda backend: how a worker waits for its GPU work (default:
                         $PAAM_CUDA_WAIT, else nap): nap or nap:US, spin for US us (default
                         50), then look at spin's word between sleeps of US us (the core
                         mostly sleeps; completion seen up to a nap late); spin on a word the
                         stream writes (fastest; a busy core per running request); poll the
                         driver; block in the driver (the core sleeps; completion seen ~0.1 ms
                         late)
  --rt                   cpu backend: SCHED_FIFO per bucket when permitted (else nice ladder);
                         any backend: the dispatcher runs above the top bucket (else nice -20)
  --rt-priority N        SCHED_FIFO priority of the lowest bucket (default: 80)
  --fair-buckets N       cpu backend with --rt: the lowest N buckets stay on the nice ladder,
                         not SCHED_FIFO (default: 1 with several buckets); give the number of
                         lowest buckets that hold only best-effort chains, so that their load
                         cannot use up the kernel's SCHED_FIFO budget on the device core
  --dispatcher-priority N  SCHED_FIFO priority of the dispatcher (default: with --rt, one above
                         the top bucket, at most 99; without --rt, 0 = normal scheduling);
                         set it above every client executor that shares its cores
  --lock-memory          once started, keep paamd's memory resident: mlockall where the
                         process may lock without limit (root, CAP_IPC_LOCK or `ulimit -l
                         unlimited`; else it says why not and carries on), and malloc keeps
                         what it frees, so that no page fault lands on a request's path
  --plugin PATH          load user kernels from a shared library (repeatable)
  --admission none|analysis   admission control (default: none = admit all, and say so)
  --overhead-ms X        epsilon for the analysis (default: 0.05)
  --preemption-ms X      kappa for the analysis (default: 0)
  --comm-cost-ms X       epsilon' for the analysis: cost of one executor-to-executor hop
                         of a chain (default: 0)
  --poll-us N|always     busy-poll window before sleeping (default: 50 with 4+ CPUs, else 0);
                         always: never sleep (for cores reserved to paamd)
  --spin-buckets N       the N most urgent buckets get the fastest path: their workers and the
                         dispatcher never sleep, and (cuda, nap wait) those workers spin on
                         their GPU work; a busy core each, the other buckets keep --poll-us and
                         --cuda-wait (default: 0)
  --dispatcher-cpu N     pin the dispatcher thread
  --thread-cpus LIST     pin the dispatcher and the workers one per CPU, e.g. 4,5,6,7: the
                         dispatcher to the first, the workers to the next ones (round the list
                         if there are more workers); with --poll-us always, a thread that never
                         sleeps then has its core to itself (cpu backend: its workers stay on
                         the device core)
  --verbose              log every registration
  --help                 this text
)";

[[noreturn]] void Usage(const std::string& error) {
  std::fprintf(stderr, "paamd: %s\n\n%s", error.c_str(), kUsage);
  std::exit(2);
}

long ParseInt(const char* flag, const char* v) {
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0') Usage(std::string(flag) + " needs an integer, got '" + v + "'");
  return x;
}

double ParseDouble(const char* flag, const char* v) {
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !std::isfinite(x) || x < 0)
    Usage(std::string(flag) + " needs a finite non-negative number, got '" + v + "'");
  return x;
}

// "4,5,6,7" -> {4, 5, 6, 7}: numbers in [lo, hi] (`what`, e.g. "CPU numbers") separated by
// commas; exits with the usage on an empty item, a number out of range or a non-number.
std::vector<int> ParseNumberList(const char* flag, const char* v, long lo, long hi, const char* what,
                                 const char* example) {
  std::vector<int> out;
  std::string_view rest = v;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    const bool digits = !item.empty() && item.size() <= 9 && item.find_first_not_of("0123456789") == std::string::npos;
    const long x = digits ? std::stol(item) : -1;
    if (x < lo || x > hi) {
      Usage(std::string(flag) + " needs " + what + " (" + std::to_string(lo) + ".." + std::to_string(hi) +
            ") separated by commas, e.g. " + example + "; got '" + v + "'");
    }
    out.push_back(static_cast<int>(x));
    if (comma == std::string_view::npos) return out;
    rest.remove_prefix(comma + 1);
  }
}

std::vector<int> ParseCpuList(const char* flag, const char* v) {
  return ParseNumberList(flag, v, 0, CPU_SETSIZE - 1, "CPU numbers", "4,5,6,7");
}

}  // namespace

int main(int argc, char** argv) {
  paam::ServerOptions o;
  int dispatcher_priority = -1;  // -1: the default, which depends on --rt
  bool lock_memory = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage(std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--socket") {
      o.socket_path = value();
    } else if (a == "--backend") {
      o.backend.kind = value();
    } else if (a == "--buckets") {
      o.backend.levels = static_cast<int>(ParseInt("--buckets", value()));
      if (o.backend.levels < 1) Usage("--buckets must be at least 1");
    } else if (a == "--be-lanes") {
      o.backend.best_effort_lanes = static_cast<int>(ParseInt("--be-lanes", value()));
      if (o.backend.best_effort_lanes < 1) Usage("--be-lanes must be at least 1");
    } else if (a == "--lanes") {
      o.backend.lanes = ParseNumberList("--lanes", value(), 1, 64, "lane counts", "2,1,1");
    } else if (a == "--device-cpu") {
      o.backend.device_cpu = static_cast<int>(ParseInt("--device-cpu", value()));
    } else if (a == "--cuda-devices") {
      o.backend.cuda_devices = value();
    } else if (a == "--cuda-wait") {
      o.backend.cuda_wait = value();
      auto wait = paam::ParseCudaWait(o.backend.cuda_wait);
      if (!wait.ok()) Usage("--cuda-wait: " + wait.status().message());
    } else if (a == "--rt") {
      o.backend.realtime = true;
    } else if (a == "--fair-buckets") {
      o.backend.fair_levels = static_cast<int>(ParseInt("--fair-buckets", value()));
      if (o.backend.fair_levels < 0) Usage("--fair-buckets must be 0 or more");
    } else if (a == "--rt-priority") {
      o.backend.rt_priority_base = static_cast<int>(ParseInt("--rt-priority", value()));
    } else if (a == "--dispatcher-priority") {
      dispatcher_priority = static_cast<int>(ParseInt("--dispatcher-priority", value()));
      if (dispatcher_priority < 0 || dispatcher_priority > 99) Usage("--dispatcher-priority must be 0..99");
    } else if (a == "--lock-memory") {
      lock_memory = true;
    } else if (a == "--plugin") {
      o.plugins.emplace_back(value());
    } else if (a == "--admission") {
      o.admission = value();
    } else if (a == "--overhead-ms") {
      o.accel.overhead_ms = ParseDouble("--overhead-ms", value());
    } else if (a == "--preemption-ms") {
      o.accel.preemption_ms = ParseDouble("--preemption-ms", value());
    } else if (a == "--comm-cost-ms") {
      o.accel.comm_cost_ms = ParseDouble("--comm-cost-ms", value());
    } else if (a == "--poll-us") {
      const char* v = value();
      if (std::strcmp(v, "always") == 0) {
        o.poll_ns = paam::ServerOptions::kPollAlways;
      } else {
        const long us = ParseInt("--poll-us", v);
        if (us < 0) Usage("--poll-us must be 0 or more, or 'always'");
        o.poll_ns = static_cast<uint64_t>(us) * 1000;
      }
    } else if (a == "--spin-buckets") {
      const long n = ParseInt("--spin-buckets", value());
      if (n < 0) Usage("--spin-buckets must be 0 or more");
      o.spin_buckets = static_cast<int>(std::min(n, 1000L));  // Start checks it against the buckets
    } else if (a == "--dispatcher-cpu") {
      o.dispatcher_cpu = static_cast<int>(ParseInt("--dispatcher-cpu", value()));
    } else if (a == "--thread-cpus") {
      o.thread_cpus = ParseCpuList("--thread-cpus", value());
    } else if (a == "--verbose" || a == "-v") {
      paam::LogVerbose() = true;
    } else {
      Usage("unknown option '" + std::string(a) + "'");
    }
  }

  if (o.backend.fair_levels >= 0) {
    if (o.backend.kind != "cpu") {
      Usage("--fair-buckets is for the cpu backend (its bucket workers' OS priorities); backend is '" +
            o.backend.kind + "'");
    }
    if (o.backend.fair_levels > o.backend.levels) {
      Usage("--fair-buckets " + std::to_string(o.backend.fair_levels) + " is more than the " +
            std::to_string(o.backend.levels) + " bucket(s) of --buckets");
    }
    if (!o.backend.realtime) {
      paam::Log("note: --fair-buckets has no effect without --rt (every bucket is on the nice ladder)");
    }
  }
  if (dispatcher_priority < 0) {
    dispatcher_priority = o.backend.realtime ? std::min(99, o.backend.rt_priority_base + o.backend.levels) : 0;
  }
  o.dispatcher_rt_priority = dispatcher_priority;

  // Block the stop signals in every thread; one thread waits for them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto server = paam::Server::Start(o);
  if (!server.ok()) {
    std::fprintf(stderr, "paamd: cannot start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  // After the start: the backend's context, the shared memory and every thread's stack are
  // mapped by now, and get locked with the rest.
  if (lock_memory) paam::Log("%s", paam::LockMemory().c_str());
  const uint64_t poll_ns = (*server)->poll_ns();
  const std::string poll = poll_ns == paam::ServerOptions::kPollAlways
                               ? std::string("always (threads never sleep)")
                               : std::to_string(poll_ns / 1000) + " us";
  // Which thread went to which CPU is in the note logged above ("threads pinned to CPUs: ...").
  std::string pinned;
  for (int cpu : o.thread_cpus) pinned += (pinned.empty() ? ", threads pinned to CPUs " : ",") + std::to_string(cpu);
  std::string lanes;
  for (size_t i = 0; i < o.backend.lanes.size() && i < static_cast<size_t>((*server)->buckets()); ++i) {
    lanes += (lanes.empty() ? ", lanes of buckets 0.. " : ",") + std::to_string(o.backend.lanes[i]);
  }
  const std::string spin =
      o.spin_buckets > 0 ? ", spin buckets " + std::to_string(o.spin_buckets) : std::string();
  paam::Log("serving on %s: backend %s, %d bucket(s)%s, admission %s, poll %s%s%s (pid %d)",
            (*server)->socket_path().c_str(), (*server)->backend_name().c_str(), (*server)->buckets(),
            lanes.c_str(), o.admission.c_str(), poll.c_str(), spin.c_str(), pinned.c_str(),
            static_cast<int>(getpid()));
  std::fflush(stderr);

  int sig = 0;
  sigwait(&set, &sig);
  paam::Log("received %s, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Stop();
  auto stats = (*server)->Stats();
  paam::Log("served %llu request(s) (%llu failed), %llu registration(s), %llu client(s) reaped",
            static_cast<unsigned long long>(stats.requests_completed),
            static_cast<unsigned long long>(stats.requests_failed),
            static_cast<unsigned long long>(stats.registrations),
            static_cast<unsigned long long>(stats.clients_reaped));
  return 0;
}
