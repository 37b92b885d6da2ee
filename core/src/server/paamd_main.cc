// paamd — the PAAM accelerator server. `paamd --help` lists the options.
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "common/cli.h"
#include "common/log.h"
#include "common/realtime.h"
#include "protocol/socket_identity.h"
#include "server/model_options.h"
#include "server/server.h"

namespace {

using paam::cli::Bad;

long ParseInt(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0') Bad(flag + " needs an integer, got '" + v + "'");
  return x;
}

double ParseDouble(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !std::isfinite(x) || x < 0)
    Bad(flag + " needs a finite non-negative number, got '" + v + "'");
  return x;
}

// "4,5,6,7" -> {4, 5, 6, 7}: numbers in [lo, hi] (`what`, e.g. "CPU numbers") separated by
// commas; an empty item, a number out of range or a non-number is refused.
std::vector<int> ParseNumberList(const std::string& flag, const std::string& v, long lo, long hi,
                                 const char* what, const char* example) {
  std::vector<int> out;
  std::string_view rest = v;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    const bool digits = !item.empty() && item.size() <= 9 && item.find_first_not_of("0123456789") == std::string::npos;
    const long x = digits ? std::stol(item) : -1;
    if (x < lo || x > hi) {
      Bad(flag + " needs " + what + " (" + std::to_string(lo) + ".." + std::to_string(hi) +
          ") separated by commas, e.g. " + example + "; got '" + v + "'");
    }
    out.push_back(static_cast<int>(x));
    if (comma == std::string_view::npos) return out;
    rest.remove_prefix(comma + 1);
  }
}

// An option with one value, given as text to `set`, which checks and stores it.
CLI::Option* Text(CLI::App& app, const std::string& flag, const char* type, const char* help,
                  std::function<void(const std::string&)> set) {
  return app.add_option_function<std::string>(flag, std::move(set), help)->type_name(type);
}

// An option with an integer value (ParseInt's check), given to `set`.
CLI::Option* Int(CLI::App& app, const std::string& flag, const char* help, std::function<void(long)> set) {
  return Text(app, flag, "N", help, [flag, set = std::move(set)](const std::string& v) { set(ParseInt(flag, v)); });
}

CLI::Option* Ms(CLI::App& app, const std::string& flag, const char* help, double* out) {
  return Text(app, flag, "X", help, [flag, out](const std::string& v) { *out = ParseDouble(flag, v); });
}

struct MainOptions {
  paam::ServerOptions server;
  int dispatcher_priority = -1;  // -1: the default, which depends on --rt
  paam::ModelOptions models;     // --model, --models, --model-plugin, --model-threads
};

// The models: PyTorch models served as kernels by the model plugin (docs/models.md).
void AddModelOptions(CLI::App& app, MainOptions* m) {
  paam::ModelOptions& mo = m->models;
  Text(app, "--model", "NAME=PATH",
       "serve a PyTorch model under NAME (repeatable): a TorchScript .pt or an\n"
       "AOTInductor .pt2, with its signature in PATH.json; loaded and run once\n"
       "at start through the model plugin (libtorch), which must be built",
       [&mo](const std::string& v) {
         auto model = paam::ParseModelFlag(v);
         if (!model.ok()) Bad(model.status().message());
         mo.models.push_back(std::move(model.value()));
       })
      ->trigger_on_parse()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  Text(app, "--models", "FILE",
       "models from a JSON file: {\"models\": [{\"name\": \"detector\", \"path\":\n"
       "\"det.pt\", \"sidecar\": \"det.pt.json\"}], \"cpu_threads\": 1}",
       [&mo](const std::string& v) {
         if (paam::Status s = paam::LoadModelsFile(v, &mo); !s.ok()) Bad(s.message());
       })
      ->trigger_on_parse();
  app.add_option("--model-plugin", mo.plugin,
                 "the model plugin (default: $PAAM_MODEL_PLUGIN, else libpaam_torch.so\n"
                 "next to paamd)")
      ->type_name("PATH");
  Int(app, "--model-threads", "intra-op threads of each model run on the cpu backend (default: 1)", [&mo](long n) {
    if (n < 1 || n > 256) Bad("--model-threads must be 1..256, got " + std::to_string(n));
    mo.cpu_threads = static_cast<int>(n);
  });
}

void AddOptions(CLI::App& app, MainOptions* m) {
  paam::ServerOptions& o = m->server;
  app.add_option("--socket", o.socket_path,
                 "Unix socket to listen on (default: $PAAM_SOCKET,\n"
                 "$XDG_RUNTIME_DIR/paam/paamd.sock or /tmp/paam-$UID/paamd.sock)")
      ->type_name("PATH");
  Text(app, "--socket-mode", "MODE",
       "the socket's mode, octal (default: 0600: only paamd's uid and root\n"
       "may connect; 0660: its group too, given a directory the group may\n"
       "enter); the socket's directory must be paamd's own and not writable\n"
       "by group or others (docs/security.md)",
       [&o](const std::string& v) {
         const bool octal = !v.empty() && v.size() <= 4 && v.find_first_not_of("01234567") == std::string::npos;
         const uint32_t mode = octal ? static_cast<uint32_t>(std::stoul(v, nullptr, 8)) : 0;
         if (!octal || !paam::CheckSocketMode(mode).ok()) {
           Bad("--socket-mode needs an octal mode with rw for the owner and at most rw for group and others, "
               "e.g. 0600 or 0660; got '" + v + "'");
         }
         o.socket_mode = mode;
       });
  app.add_option("--backend", o.backend.kind, "device backend (default: cpu)")->type_name("cpu|cuda");
  Int(app, "--buckets", "buckets = hardware priority levels to use (default: 1)", [&o](long n) {
    if (n < 1) Bad("--buckets must be at least 1");
    o.backend.levels = static_cast<int>(n);
  });
  Int(app, "--be-lanes",
      "concurrent kernels in the lowest bucket when there are several buckets\n"
      "(default: 4 on cuda, as the paper's best-effort streams; 1 on cpu)",
      [&o](long n) {
        if (n < 1) Bad("--be-lanes must be at least 1");
        o.backend.best_effort_lanes = static_cast<int>(n);
      });
  Text(app, "--lanes", "LIST",
       "concurrent kernels per bucket from the most urgent, e.g. 2 (bucket 0\n"
       "runs two at a time: a chain whose branches submit side by side);\n"
       "buckets not listed keep the rule above (1, the lowest --be-lanes)",
       [&o](const std::string& v) { o.backend.lanes = ParseNumberList("--lanes", v, 1, 64, "lane counts", "2,1,1"); });
  Int(app, "--device-cpu", "cpu backend: core that plays the device (default: last core; -2: none)",
      [&o](long n) { o.backend.device_cpu = static_cast<int>(n); });
  app.add_option("--cuda-devices", o.backend.cuda_devices, "cuda backend: GPUs to serve, e.g. 0,1 (default: all)")
      ->type_name("LIST");
  Text(app, "--cuda-wait", "MODE",
       "cuda backend: how a worker waits for its GPU work (default:\n"
       "$PAAM_CUDA_WAIT, else nap): nap or nap:US, spin for US us (default\n"
       "50), then look at spin's word between sleeps of US us (the core\n"
       "mostly sleeps; completion seen up to a nap late); spin on a word the\n"
       "stream writes (fastest; a busy core per running request); poll the\n"
       "driver; block in the driver (the core sleeps; completion seen ~0.1 ms\n"
       "late)",
       [&o](const std::string& v) {
         auto wait = paam::ParseCudaWait(v);
         if (!wait.ok()) Bad("--cuda-wait: " + wait.status().message());
         o.backend.cuda_wait = v;
       });
  app.add_flag("--gpu-preempt", o.backend.gpu_preempt,
               "cuda backend: preempt the lower buckets in slices: while a more\n"
               "urgent bucket of the GPU has work, their built-in kernels pause at\n"
               "their next slice and resume where they stopped, plugin kernels with\n"
               "CUDA slices wait between slices, and other kernels wait before they\n"
               "start; unless --preemption-ms is given, the analysis' kappa is the\n"
               "slice plus its launch (docs/gpu.md)");
  Int(app, "--gpu-slice-us", "--gpu-preempt: the longest slice of a built-in kernel, us (default: 20)",
      [&o](long n) {
        if (n < 1 || n > 10'000) Bad("--gpu-slice-us must be 1..10000, got " + std::to_string(n));
        o.backend.gpu_slice_us = static_cast<int>(n);
      });
  app.add_flag("--rt", o.backend.realtime,
               "cpu backend: SCHED_FIFO per bucket when permitted (else nice ladder);\n"
               "any backend: the dispatcher runs above the top bucket (else nice -20)");
  Int(app, "--rt-priority", "SCHED_FIFO priority of the lowest bucket (default: 80)",
      [&o](long n) { o.backend.rt_priority_base = static_cast<int>(n); });
  Int(app, "--fair-buckets",
      "cpu backend with --rt: the lowest N buckets stay on the nice ladder,\n"
      "not SCHED_FIFO (default: 1 with several buckets); give the number of\n"
      "lowest buckets that hold only best-effort chains, so that their load\n"
      "cannot use up the kernel's SCHED_FIFO budget on the device core",
      [&o](long n) {
        if (n < 0) Bad("--fair-buckets must be 0 or more");
        o.backend.fair_levels = static_cast<int>(n);
      });
  Int(app, "--dispatcher-priority",
      "SCHED_FIFO priority of the dispatcher (default: with --rt, one above\n"
      "the top bucket, at most 99; without --rt, 0 = normal scheduling);\n"
      "set it above every client executor that shares its cores",
      [m](long n) {
        if (n < 0 || n > 99) Bad("--dispatcher-priority must be 0..99");
        m->dispatcher_priority = static_cast<int>(n);
      });
  app.add_flag("--lock-memory", o.lock_memory,
               "once started, keep paamd's memory resident: mlockall where the\n"
               "process may lock without limit (root, CAP_IPC_LOCK or `ulimit -l\n"
               "unlimited`; else it says why not and carries on), and malloc keeps\n"
               "what it frees, so that no page fault lands on a request's path;\n"
               "clients' regions are locked only up to the two caps below");
  Int(app, "--lock-memory-total-mib",
      "--lock-memory: most MiB of regions locked in all (default: 1024);\n"
      "regions beyond a cap are mapped unlocked, and the log says so once",
      [&o](long n) {
        if (n < 0) Bad("--lock-memory-total-mib must be 0 or more");
        o.lock_total_bytes = static_cast<uint64_t>(n) << 20;
      });
  Int(app, "--lock-memory-client-mib", "--lock-memory: most MiB of one client's regions locked (default: 256)",
      [&o](long n) {
        if (n < 0) Bad("--lock-memory-client-mib must be 0 or more");
        o.lock_client_bytes = static_cast<uint64_t>(n) << 20;
      });
  Int(app, "--registration-timeout-ms",
      "a connection that has not registered this long after connecting is\n"
      "closed (default: 5000)",
      [&o](long n) {
        if (n < 1 || n > 3'600'000) Bad("--registration-timeout-ms must be 1..3600000");
        o.registration_timeout_ms = static_cast<uint32_t>(n);
      });
  Int(app, "--max-request-ms",
      "the longest a request may take from its submission, queued and\n"
      "running (default: 60000); past it the request is cancelled: a long\n"
      "built-in kernel stops at its next slice, and the client gets\n"
      "'cancelled'; a client's own time limit may be shorter",
      [&o](long n) {
        if (n < 1 || n > 86'400'000) Bad("--max-request-ms must be 1..86400000 (a day), got " + std::to_string(n));
        o.max_request_ms = static_cast<uint64_t>(n);
      });
  // Access policy: rules in the order given (a --policy file's where it stands).
  auto add_rule = [&o](paam::AccessRule::Kind kind, const std::string& v) {
    auto rule = paam::ParseRuleFlag(kind, v);
    if (!rule.ok()) Bad(rule.status().message());
    o.access.rules.push_back(std::move(rule.value()));
  };
  Text(app, "--allow-user", "USER[:CAPS]",
       "let this user (name or uid) connect too (repeatable); CAPS: comma-\n"
       "separated max-priority=N, max-clients=N, max-region-mib=N,\n"
       "max-request-ms=N. Default: only paamd's own uid (docs/security.md)",
       [add_rule](const std::string& v) { add_rule(paam::AccessRule::Kind::kUser, v); })
      ->trigger_on_parse()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  Text(app, "--allow-group", "GROUP[:CAPS]",
       "let this group's members connect (repeatable; CAPS as --allow-user,\n"
       "counted over all members together). The socket's mode and directory\n"
       "must let them reach it too (--socket-mode 0660)",
       [add_rule](const std::string& v) { add_rule(paam::AccessRule::Kind::kGroup, v); })
      ->trigger_on_parse()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  Text(app, "--policy", "FILE",
       "access rules from a JSON file: {\"allow\": [{\"group\": \"robots\",\n"
       "\"max_priority\": 50, \"max_clients\": 16, \"max_region_mib\": 512,\n"
       "\"max_request_ms\": 1000}, {\"user\": \"alice\"}]}",
       [&o](const std::string& v) {
         auto p = paam::LoadPolicyFile(v);
         if (!p.ok()) Bad("--policy: " + p.status().message());
         for (auto& r : p->rules) o.access.rules.push_back(std::move(r));
       })
      ->trigger_on_parse();
  Text(app, "--plugin", "PATH", "load user kernels from a shared library (repeatable)",
       [&o](const std::string& v) { o.plugins.push_back(v); })
      ->trigger_on_parse()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--admission", o.admission, "admission control (default: none = admit all, and say so)")
      ->type_name("none|analysis");
  Text(app, "--queue", "fifo|edf",
       "order of the requests inside a bucket: fifo (default), by chain\n"
       "priority and FIFO among equals, which the analysis covers; edf, by\n"
       "absolute deadline (release + the registration's relative deadline),\n"
       "FIFO among equals; the analysis does not cover edf (no --admission\n"
       "analysis with it)",
       [&o](const std::string& v) {
         if (v != "fifo" && v != "edf") Bad("--queue must be fifo or edf, got '" + v + "'");
         o.queue = v;
       });
  Text(app, "--fallback", "off|cpu-on-overload",
       "multi-version kernels: cpu-on-overload runs a kernel's CPU version on a\n"
       "fallback thread when its bucket's queue would make the request miss\n"
       "its deadline and the CPU version's recent time meets it, or when the\n"
       "GPU is lost; each completion says where it ran (default: off)",
       [&o](const std::string& v) {
         if (v != "off" && v != "cpu-on-overload") Bad("--fallback must be off or cpu-on-overload, got '" + v + "'");
         o.fallback = v;
       });
  Ms(app, "--overhead-ms", "epsilon for the analysis (default: 0.05)", &o.accel.overhead_ms);
  Ms(app, "--preemption-ms", "kappa for the analysis (default: 0)", &o.accel.preemption_ms);
  Ms(app, "--comm-cost-ms",
     "epsilon' for the analysis: cost of one executor-to-executor hop\n"
     "of a chain (default: 0)",
     &o.accel.comm_cost_ms);
  Text(app, "--poll-us", "N|always",
       "busy-poll window before sleeping (default: 50 with 4+ CPUs, else 0);\n"
       "always: never sleep (for cores reserved to paamd)",
       [&o](const std::string& v) {
         if (v == "always") {
           o.poll_ns = paam::ServerOptions::kPollAlways;
           return;
         }
         const long us = ParseInt("--poll-us", v);
         if (us < 0) Bad("--poll-us must be 0 or more, or 'always'");
         o.poll_ns = static_cast<uint64_t>(us) * 1000;
       });
  Int(app, "--spin-buckets",
      "the N most urgent buckets get the fastest path: their workers and the\n"
      "dispatcher never sleep, and (cuda, nap wait) those workers spin on\n"
      "their GPU work; a busy core each, the other buckets keep --poll-us and\n"
      "--cuda-wait (default: 0)",
      [&o](long n) {
        if (n < 0) Bad("--spin-buckets must be 0 or more");
        o.spin_buckets = static_cast<int>(std::min(n, 1000L));  // Start checks it against the buckets
      });
  Int(app, "--dispatcher-cpu", "pin the dispatcher thread", [&o](long n) { o.dispatcher_cpu = static_cast<int>(n); });
  Text(app, "--thread-cpus", "LIST",
       "pin the dispatcher and the workers one per CPU, e.g. 4,5,6,7: the\n"
       "dispatcher to the first, the workers to the next ones (round the list\n"
       "if there are more workers); with --poll-us always, a thread that never\n"
       "sleeps then has its core to itself (cpu backend: its workers stay on\n"
       "the device core)",
       [&o](const std::string& v) {
         o.thread_cpus = ParseNumberList("--thread-cpus", v, 0, CPU_SETSIZE - 1, "CPU numbers", "4,5,6,7");
       });
  app.add_flag_callback("-v,--verbose", [] { paam::LogVerbose() = true; }, "log every registration");
}

// The rules across options.
void CheckCombination(const paam::ServerOptions& o) {
  if (o.queue == "edf" && o.admission == "analysis") {
    Bad("--queue edf cannot be combined with --admission analysis: the response-time analysis covers requests "
        "served by chain priority inside a bucket (--queue fifo), not EDF, and gives no bound there; use "
        "--admission none with --queue edf, or --queue fifo (docs/analysis.md)");
  }
  if (o.backend.gpu_preempt && o.backend.kind != "cuda") {
    Bad("--gpu-preempt is for the cuda backend (the cpu backend preempts at its kernels' preemption points "
        "anyway); backend is '" + o.backend.kind + "'");
  }
  if (o.backend.fair_levels < 0) return;
  if (o.backend.kind != "cpu") {
    Bad("--fair-buckets is for the cpu backend (its bucket workers' OS priorities); backend is '" + o.backend.kind +
        "'");
  }
  if (o.backend.fair_levels > o.backend.levels) {
    Bad("--fair-buckets " + std::to_string(o.backend.fair_levels) + " is more than the " +
        std::to_string(o.backend.levels) + " bucket(s) of --buckets");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MainOptions m;
  CLI::App app("Serves accelerator requests from local clients by chain priority.", "paamd");
  paam::cli::Setup(app);
  AddOptions(app, &m);
  AddModelOptions(app, &m);
  paam::cli::ParseOrExit(app, argc, argv, 2, [&m] { CheckCombination(m.server); });
  paam::ServerOptions& o = m.server;
  if (!m.models.models.empty()) {
    auto plugin = paam::FindModelPlugin(m.models.plugin);
    if (!plugin.ok()) {
      std::fprintf(stderr, "paamd: cannot serve models: %s\n", plugin.status().message().c_str());
      return 2;
    }
    paam::Log("loading %zu model(s) with %s (each is run once to check its signature)", m.models.models.size(),
              plugin->c_str());
    o.configured_plugins.push_back({*plugin, paam::ModelPluginConfig(m.models, o.backend)});
  }
  int dispatcher_priority = m.dispatcher_priority;
  if (o.backend.gpu_preempt && app.count("--preemption-ms") == 0) {
    o.accel.preemption_ms = paam::SlicedPreemptionMs(o.backend.gpu_slice_us);  // what the slices bound
  }

  if (o.backend.fair_levels >= 0 && !o.backend.realtime) {
    paam::Log("note: --fair-buckets has no effect without --rt (every bucket is on the nice ladder)");
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
  std::string access = "uid " + std::to_string(geteuid());
  for (const auto& r : o.access.rules) access += ", " + r.label;
  std::string order;  // the non-default queue order and fallback
  if (o.queue != "fifo") order += ", queue " + o.queue;
  if (o.fallback != "off") order += ", fallback " + o.fallback;
  if (o.backend.gpu_preempt) {
    char kappa[32];
    std::snprintf(kappa, sizeof(kappa), "%.3f", o.accel.preemption_ms);
    order += ", gpu preemption in " + std::to_string(o.backend.gpu_slice_us) + " us slices (kappa " + kappa + " ms)";
  }
  paam::Log("serving on %s: backend %s, %d bucket(s)%s, admission %s%s, poll %s%s%s, access %s (pid %d)",
            (*server)->socket_path().c_str(), (*server)->backend_name().c_str(), (*server)->buckets(),
            lanes.c_str(), o.admission.c_str(), order.c_str(), poll.c_str(), spin.c_str(), pinned.c_str(),
            access.c_str(), static_cast<int>(getpid()));
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
