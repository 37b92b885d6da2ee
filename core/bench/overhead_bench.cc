// paam_overhead_bench — round-trip overhead of requests whose kernel does nothing (`noop`),
// through a running paamd. Prints one JSON object: per-request round trip and per-stage
// percentiles from the request timestamps (the paper's Fig. 12 stages).
//
//   paam_overhead_bench --socket PATH --wait spin|suspend|hybrid --payload BYTES --requests N
//
// The client writes `payload` input bytes into its region before each request (reported
// apart as client_write_input: a producer writes its data once with or without paam) and the
// server answers with `payload` output bytes (noop leaves them as they are). The round trip is
// from Submit to the client being back with the result. `paam bench overhead`
// runs this for every wait mode and payload and renders the table, JSON and plot.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "common/clock.h"
#include "common/realtime.h"
#include "paam/client.h"

namespace {

struct Series {
  const char* name;
  std::vector<uint64_t> v;
};

double Round3(double x) { return std::round(x * 1000.0) / 1000.0; }

// One stage's percentiles, in microseconds to the nanosecond.
nlohmann::ordered_json Stats(const Series& s) {
  std::vector<uint64_t> v = s.v;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {
    size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return Round3(static_cast<double>(v[std::min(i, v.size() - 1)]) / 1000.0);
  };
  double sum = 0;
  for (uint64_t x : v) sum += static_cast<double>(x);
  return {{"min_us", pct(0)},   {"mean_us", Round3(sum / static_cast<double>(v.size()) / 1000.0)},
          {"p50_us", pct(50)},  {"p99_us", pct(99)},
          {"p999_us", pct(99.9)}, {"max_us", pct(100)}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket, wait = "spin";
  uint64_t payload = 8, requests = 100000, warmup = 2000;
  int cpu = -1;
  CLI::App app("Round trip of `noop` requests through a running paamd; prints one JSON object\n"
               "(per-request round trip and per-stage percentiles).",
               "paam_overhead_bench");
  paam::cli::Setup(app);
  app.add_option("--socket", socket, "paamd's socket (default: the client's default)")->type_name("PATH");
  app.add_option("--wait", wait, "how the client waits for its result (default: spin)")
      ->type_name("spin|suspend|hybrid")
      ->check(CLI::IsMember({"spin", "suspend", "hybrid"}).description(""));
  app.add_option("--payload", payload, "input and output bytes per request (default: 8)")
      ->type_name("BYTES")
      ->check(paam::cli::AtLeast(0));
  app.add_option("--requests", requests, "requests measured (default: 100000)")
      ->type_name("N")
      ->check(paam::cli::AtLeast(1));
  app.add_option("--warmup", warmup, "requests before those, not measured (default: 2000)")
      ->type_name("N")
      ->check(paam::cli::AtLeast(0));
  app.add_option("--cpu", cpu, "pin the client to this CPU (default: -1, not pinned)")->type_name("N");
  paam::cli::ParseOrExit(app, argc, argv, 2);
  auto mode = paam::ParseWaitMode(wait);
  if (!mode) {
    std::fprintf(stderr, "paam_overhead_bench: unknown wait mode '%s'\n", wait.c_str());
    return 2;
  }
  std::string note = paam::PinThisThread(cpu);
  paam::ClientOptions o;
  o.socket_path = socket;
  o.name = "overhead-bench";
  o.priority = 1;
  o.wait = *mode;
  o.kernels = {{"noop", std::max<uint64_t>(payload, 1), std::max<uint64_t>(payload, 1)}};
  auto client = paam::Client::Connect(o);
  if (!client.ok()) {
    std::fprintf(stderr, "paam_overhead_bench: %s\n", client.status().ToString().c_str());
    return 1;
  }
  paam::Client& c = **client;
  std::vector<uint8_t> source(payload, 0x5a);
  const uint64_t params[4] = {payload, 0, 0, 0};
  std::vector<Series> series = {{"round_trip", {}},       {"submit_to_dequeue", {}}, {"queue_and_worker_wake", {}},
                                {"launch", {}},           {"kernel", {}},            {"completion", {}},
                                {"client_wake", {}},      {"client_write_input", {}}};
  for (auto& s : series) s.v.reserve(requests);
  for (uint64_t i = 0; i < warmup + requests; ++i) {
    const uint64_t w0 = paam::NowNs();
    std::memcpy(c.Input(0).data(), source.data(), payload);  // the producer's own write, zero copy after it
    const uint64_t t0 = paam::NowNs();
    paam::Status st = c.Call(0, payload, params, nullptr);
    const uint64_t t1 = paam::NowNs();
    if (!st.ok()) {
      std::fprintf(stderr, "request %llu failed: %s\n", static_cast<unsigned long long>(i), st.ToString().c_str());
      return 1;
    }
    if (i < warmup) continue;
    paam::RequestTimestamps t = c.Timestamps(0);
    series[0].v.push_back(t1 - t0);
    series[1].v.push_back(t.dequeued - t.submitted);
    series[2].v.push_back(t.picked - t.dequeued);
    series[3].v.push_back(t.device_start - t.picked);
    series[4].v.push_back(t.device_end - t.device_start);
    series[5].v.push_back(t.completed - t.device_end);
    series[6].v.push_back(t.woken - t.completed);
    series[7].v.push_back(t0 - w0);
  }
  nlohmann::ordered_json out = {{"wait", wait}, {"payload_bytes", payload}, {"requests", requests}, {"pin_note", note}};
  nlohmann::ordered_json& stages = out["stages"];
  for (const Series& s : series) stages[s.name] = Stats(s);
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
