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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/realtime.h"
#include "paam/client.h"

namespace {

struct Series {
  const char* name;
  std::vector<uint64_t> v;
};

void PrintStats(const Series& s, bool last) {
  std::vector<uint64_t> v = s.v;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {
    size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return static_cast<double>(v[std::min(i, v.size() - 1)]) / 1000.0;
  };
  double sum = 0;
  for (uint64_t x : v) sum += static_cast<double>(x);
  std::printf("    \"%s\": {\"min_us\": %.3f, \"mean_us\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f, "
              "\"p999_us\": %.3f, \"max_us\": %.3f}%s\n",
              s.name, pct(0), sum / static_cast<double>(v.size()) / 1000.0, pct(50), pct(99), pct(99.9), pct(100),
              last ? "" : ",");
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket, wait = "spin";
  uint64_t payload = 8, requests = 100000, warmup = 2000;
  int cpu = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--socket") socket = argv[i + 1];
    else if (a == "--wait") wait = argv[i + 1];
    else if (a == "--payload") payload = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--requests") requests = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--warmup") warmup = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--cpu") cpu = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  auto mode = paam::ParseWaitMode(wait);
  if (!mode || requests == 0) {
    std::fprintf(stderr, "usage: paam_overhead_bench --socket PATH --wait spin|suspend|hybrid --payload N --requests N\n");
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
  std::printf("{\n  \"wait\": \"%s\", \"payload_bytes\": %llu, \"requests\": %llu, \"pin_note\": \"%s\",\n  \"stages\": {\n",
              wait.c_str(), static_cast<unsigned long long>(payload), static_cast<unsigned long long>(requests),
              note.c_str());
  for (size_t i = 0; i < series.size(); ++i) PrintStats(series[i], i + 1 == series.size());
  std::printf("  }\n}\n");
  return 0;
}
