// server/stats_json.cc — the live statistics snapshot (control thread): what tools read with a
// kStats request, as JSON, in the schema python/paam/observe.py documents:
// server, totals, lanes (queue depth, in flight, served, failed, busy share and the stages of
// the recent window), clients (counts, latencies, bound monitor), overheads (epsilon and kappa
// as the analysis used them and as observed) and the violations in total.
//
// Stages from a request's stamps: dispatch = dequeued - submitted, queue = picked - dequeued,
// launch = device_start - picked, device = device_end - device_start, complete = completed -
// device_end, total = completed - submitted.
//
// Observed overheads, over the recent window of every lane:
//  - epsilon (docs/analysis.md: the per-request server overhead, charged once per segment in H* =
//    H + delta * epsilon) is what a request spends in paamd besides waiting for its bucket
//    (queue: the blocking and interference of Lemma 2) and running (device: A): dispatch +
//    launch + complete. Its p99 is reported.
//  - kappa (the device-level preemption cost, A* = A + 2 kappa) shows where a request must
//    start while a lower bucket's kernel occupies the device: the launch stage of requests
//    picked while a lower bucket's lane of their unit was running, less the median launch of
//    requests picked while none was (that part is epsilon's). Its p99 is reported; null
//    while no request met a running lower bucket in the window.
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "server/server_impl.h"

namespace paam {

namespace {

using Json = nlohmann::ordered_json;

double Round3(double x) { return std::round(x * 1000.0) / 1000.0; }
uint64_t Diff(uint64_t later, uint64_t earlier) { return later > earlier ? later - earlier : 0; }
double Us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

Json SummaryJson(std::vector<double> v) {
  const Summary s = Summarize(&v);
  return Json{{"n", s.n}, {"p50", Round3(s.p50)}, {"p99", Round3(s.p99)}, {"max", Round3(s.max)}};
}

Json MsOrNull(bool present, double ms) { return present ? Json(Round3(ms * 1000.0) / 1000.0) : Json(nullptr); }

}  // namespace

std::string Server::Impl::StatsJson() const {
  const uint64_t now = NowNs();
  const uint64_t since = now > kWindowNs ? now - kWindowNs : 0;
  const bool analysis = options_.admission == "analysis";
  Json j;
  j["server"] = {{"pid", static_cast<int>(getpid())},
                 {"uid", static_cast<unsigned>(geteuid())},
                 {"backend", std::string(backend_->name())},
                 {"buckets", buckets_},
                 {"units", units_},
                 {"socket", options_.socket_path},
                 {"uptime_s", Round3(static_cast<double>(Diff(now, start_ns_)) / 1e9)},
                 {"window_s", static_cast<double>(kWindowNs) / 1e9},
                 {"admission", options_.admission},
                 {"now_ns", now}};
  j["totals"] = {{"requests_completed", completed_.load()},
                 {"requests_failed", failed_.load()},
                 {"requests_cancelled", cancelled_requests_.load()},
                 {"protocol_errors", protocol_errors_.load()},
                 {"registrations", registrations_.load()},
                 {"clients_reaped", reaped_.load()},
                 {"active_clients", active_.load()},
                 {"connections_dropped", dropped_.load()}};

  std::vector<double> epsilon, kappa_launch, free_launch;  // ms, ms, us
  Json lanes = Json::array();
  for (int u = 0; u < units_; ++u) {
    for (int b = 0; b < buckets_; ++b) {
      const uint32_t depth = queues_[static_cast<size_t>(u * buckets_ + b)]->size();
      for (int l = 0; l < live_.lanes(b); ++l) {
        const LaneLive& lane = live_.Lane(u, b, l);
        const std::vector<StageSample> samples = lane.Window(since);
        std::vector<double> stage[6];  // dispatch, queue, launch, device, complete, total (us)
        uint64_t busy_ns = 0;
        for (const StageSample& s : samples) {
          const uint64_t dispatch = Diff(s.t[1], s.t[0]), launch = Diff(s.t[3], s.t[2]),
                         complete = Diff(s.t[5], s.t[4]), device = Diff(s.t[4], s.t[3]);
          stage[0].push_back(Us(dispatch));
          stage[1].push_back(Us(Diff(s.t[2], s.t[1])));
          stage[2].push_back(Us(launch));
          stage[3].push_back(Us(device));
          stage[4].push_back(Us(complete));
          stage[5].push_back(Us(Diff(s.t[5], s.t[0])));
          busy_ns += device;
          epsilon.push_back(static_cast<double>(dispatch + launch + complete) / 1e6);
          (s.contended ? kappa_launch : free_launch).push_back(static_cast<double>(launch) / 1e3);
        }
        // The window is the last kWindowNs, or less where the ring holds less (busy lanes) or
        // the server is younger.
        uint64_t from = std::max(since, start_ns_);
        if (samples.size() + 1 >= kLaneWindow) from = std::max(from, samples.front().t[3]);
        const double span = static_cast<double>(Diff(now, from));
        const double busy = span > 0 ? std::clamp(static_cast<double>(busy_ns) / span, 0.0, 1.0) : 0.0;
        lanes.push_back({{"unit", u},
                         {"bucket", b},
                         {"lane", l},
                         {"queue_depth", depth},
                         {"in_flight", lane.busy() ? 1 : 0},
                         {"served", lane.served()},
                         {"failed", lane.failed()},
                         {"busy_share", Round3(busy)},
                         {"stages_us",
                          {{"dispatch", SummaryJson(stage[0])},
                           {"queue", SummaryJson(stage[1])},
                           {"launch", SummaryJson(stage[2])},
                           {"device", SummaryJson(stage[3])},
                           {"complete", SummaryJson(stage[4])},
                           {"total", SummaryJson(stage[5])}}}});
      }
    }
  }
  j["lanes"] = std::move(lanes);

  std::vector<const Session*> clients;
  for (const auto& [fd, s] : sessions_) {
    if (s->registered) clients.push_back(s.get());
  }
  std::sort(clients.begin(), clients.end(), [](const Session* a, const Session* b) {
    return a->priority != b->priority ? a->priority > b->priority : a->id < b->id;
  });
  Json cj = Json::array();
  for (const Session* s : clients) {
    std::vector<double> latency;
    for (uint64_t ns : s->live.Latencies(since)) latency.push_back(Us(ns));
    const uint64_t bound = s->live.bound_ns.load(std::memory_order_relaxed);
    const uint64_t requests = s->live.requests();
    cj.push_back({{"id", s->id},
                  {"name", s->name},
                  {"pid", static_cast<int>(s->peer.pid)},
                  {"uid", static_cast<unsigned>(s->peer.uid)},
                  {"priority", s->priority},
                  {"bucket", s->bucket.load(std::memory_order_relaxed)},
                  {"unit", s->unit},
                  {"timed", s->timed},
                  {"requests", requests},
                  {"failed", s->live.failed()},
                  {"latency_us", SummaryJson(std::move(latency))},
                  {"bound_ms", MsOrNull(bound != 0, static_cast<double>(bound) / 1e6)},
                  {"worst_observed_ms", MsOrNull(requests != 0, static_cast<double>(s->live.worst_ns()) / 1e6)},
                  {"violations", s->live.violations()}});
  }
  j["clients"] = std::move(cj);

  const Summary eps = Summarize(&epsilon);
  const Summary free = Summarize(&free_launch);
  for (double& k : kappa_launch) k = std::max(0.0, k - free.p50) / 1e3;  // us -> ms, less the plain launch
  const Summary kap = Summarize(&kappa_launch);
  // With one bucket and no best-effort bucket below it, the analysis charges no kappa.
  const double kappa_used = buckets_ > 1 ? options_.accel.preemption_ms : 0.0;
  j["overheads"] = {{"epsilon_ms", {{"used", MsOrNull(analysis, options_.accel.overhead_ms)},
                                    {"observed_p99", MsOrNull(eps.n != 0, eps.p99)}}},
                    {"kappa_ms", {{"used", MsOrNull(analysis, kappa_used)},
                                  {"observed_p99", MsOrNull(kap.n != 0, kap.p99)}}}};
  j["violations_total"] = live_.violations_total.load(std::memory_order_relaxed);
  return j.dump();
}

}  // namespace paam
