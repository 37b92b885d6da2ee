// Live statistics, the trace and the bound monitor of paamd, read over its control socket the
// way tools read them (client/control_client.h), against requests the test sends itself.
#include "server/live_stats.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/control_client.h"
#include "paam/client.h"
#include "server/server.h"
#include "server/test_socket.h"

namespace paam {
namespace {

using Json = nlohmann::json;
using test_util::TempSocket;

std::unique_ptr<Server> StartServer(int buckets, const std::string& admission = "none",
                                    uint32_t registration_timeout_ms = 5000) {
  ServerOptions o;
  o.socket_path = TempSocket();
  o.backend.levels = buckets;
  o.backend.device_cpu = -2;  // do not pin: tests run on small machines
  o.admission = admission;
  o.registration_timeout_ms = registration_timeout_ms;
  auto s = Server::Start(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s.value()) : nullptr;
}

std::unique_ptr<Client> Connect(const Server& server, const std::string& name, uint32_t priority,
                                std::optional<TimingModel> timing = std::nullopt) {
  ClientOptions o;
  o.socket_path = server.socket_path();
  o.name = name;
  o.priority = priority;
  o.kernels = {{"noop", 64, 64, std::nullopt}, {"spin", 0, 8, std::nullopt}};
  o.timing = std::move(timing);
  auto c = Client::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c.value()) : nullptr;
}

void Noop(Client& c, int n) {
  const uint64_t params[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) {
    uint64_t out = 0;
    ASSERT_TRUE(c.Call(c.KernelIndex("noop"), 0, params, &out).ok());
  }
}

std::unique_ptr<ControlClient> Tool(const Server& server) {
  auto t = ControlClient::Connect(server.socket_path(), 5000);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t.value()) : nullptr;
}

Json Stats(ControlClient& tool) {
  auto text = tool.Stats();
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? Json::parse(*text) : Json::object();
}

const Json* ClientNamed(const Json& stats, const std::string& name) {
  for (const Json& c : stats["clients"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

// Every record of every chunk, as [client, pid, priority, kernel, unit, bucket, lane, sequence,
// status, submitted, dequeued, picked, device_start, device_end, completed].
std::vector<Json> Records(const std::vector<std::string>& chunks, std::map<uint64_t, std::string>* names) {
  std::vector<Json> out;
  for (const std::string& chunk : chunks) {
    const Json j = Json::parse(chunk);
    for (const auto& [id, name] : j["clients"].items()) (*names)[std::stoull(id)] = name.get<std::string>();
    for (const Json& r : j["records"]) out.push_back(r);
  }
  return out;
}

TEST(LiveStats, CountsPerClientAndLaneMatchTheRequestsSent) {
  auto server = StartServer(2);
  auto high = Connect(*server, "high", 10);
  auto low = Connect(*server, "low", 5);
  ASSERT_TRUE(high && low);
  constexpr int kHigh = 30, kLow = 20;
  Noop(*high, kHigh);
  Noop(*low, kLow);
  auto tool = Tool(*server);
  ASSERT_NE(tool, nullptr);
  const Json s = Stats(*tool);

  EXPECT_EQ(s["server"]["pid"], getpid());
  EXPECT_EQ(s["server"]["buckets"], 2);
  EXPECT_EQ(s["server"]["backend"], "cpu");
  EXPECT_EQ(s["server"]["admission"], "none");
  EXPECT_EQ(s["totals"]["requests_completed"], kHigh + kLow);
  EXPECT_EQ(s["totals"]["requests_failed"], 0);
  EXPECT_EQ(s["totals"]["active_clients"], 2);
  ASSERT_EQ(s["clients"].size(), 2u);
  EXPECT_EQ(s["clients"][0]["name"], "high");  // sorted by priority, most urgent first
  const Json* h = ClientNamed(s, "high");
  const Json* l = ClientNamed(s, "low");
  ASSERT_TRUE(h && l);
  EXPECT_EQ((*h)["requests"], kHigh);
  EXPECT_EQ((*l)["requests"], kLow);
  EXPECT_EQ((*h)["failed"], 0);
  EXPECT_EQ((*h)["pid"], getpid());
  EXPECT_EQ((*h)["uid"], geteuid());
  EXPECT_EQ((*h)["priority"], 10);
  EXPECT_EQ((*h)["bucket"], 0);  // two priorities on two buckets: rule R2
  EXPECT_EQ((*l)["bucket"], 1);
  EXPECT_EQ((*h)["id"], high->client_id());
  EXPECT_EQ((*h)["latency_us"]["n"], kHigh);
  EXPECT_EQ((*h)["timed"], false);
  EXPECT_TRUE((*h)["bound_ms"].is_null());
  EXPECT_EQ((*h)["violations"], 0);
  EXPECT_GT((*h)["worst_observed_ms"].get<double>(), 0.0);

  std::map<int, int> served;  // bucket -> served over its lanes
  for (const Json& lane : s["lanes"]) {
    const int b = lane["bucket"];
    served[b] += lane["served"].get<int>();
    EXPECT_EQ(lane["failed"], 0);
    EXPECT_EQ(lane["in_flight"], 0);
    EXPECT_EQ(lane["queue_depth"], 0);
    EXPECT_EQ(lane["stages_us"]["total"]["n"], lane["served"]);
    for (const char* stage : {"dispatch", "queue", "launch", "device", "complete", "total"}) {
      const Json& st = lane["stages_us"][stage];
      EXPECT_LE(st["p50"].get<double>(), st["p99"].get<double>()) << stage;
      EXPECT_LE(st["p99"].get<double>(), st["max"].get<double>()) << stage;
    }
    const double busy = lane["busy_share"];
    EXPECT_GE(busy, 0.0);
    EXPECT_LE(busy, 1.0);
  }
  EXPECT_EQ(served[0], kHigh);
  EXPECT_EQ(served[1], kLow);
  EXPECT_TRUE(s["overheads"]["epsilon_ms"]["used"].is_null());  // no analysis
  EXPECT_GT(s["overheads"]["epsilon_ms"]["observed_p99"].get<double>(), 0.0);
  EXPECT_EQ(s["violations_total"], 0);
}

TEST(LiveStats, BucketIsTheCurrentOneNotTheOneAtRegistration) {
  auto server = StartServer(2);
  auto mid = Connect(*server, "mid", 5);
  ASSERT_NE(mid, nullptr);
  auto tool = Tool(*server);
  EXPECT_EQ((*ClientNamed(Stats(*tool), "mid"))["bucket"], 0);  // alone: the top bucket
  auto top = Connect(*server, "top", 9);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ((*ClientNamed(Stats(*tool), "mid"))["bucket"], 1);  // a more urgent one came
}

TEST(LiveStats, ASnapshotLargerThanOneMessageComesInChunks) {
  constexpr int kClients = 260;  // about 270 bytes of JSON each
  rlimit r{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &r), 0);
  if (r.rlim_cur < 16 * kClients) {
    r.rlim_cur = std::min<rlim_t>(r.rlim_max, 16 * kClients);
    (void)setrlimit(RLIMIT_NOFILE, &r);
  }
  if (r.rlim_cur < 16 * kClients) GTEST_SKIP() << "needs " << 16 * kClients << " file descriptors";
  auto server = StartServer(1);
  std::vector<std::unique_ptr<Client>> clients;
  const std::string padding(40, 'x');
  for (int i = 0; i < kClients; ++i) clients.push_back(Connect(*server, "client_" + padding + std::to_string(i), 1));
  auto tool = Tool(*server);
  auto text = tool->Stats();
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_GT(text->size(), wire::kMaxControlPayload);
  EXPECT_EQ(Json::parse(*text)["clients"].size(), static_cast<size_t>(kClients));
}

TEST(LiveStats, TraceHoldsEveryRequestBetweenStartAndReadInSequenceOrder) {
  auto server = StartServer(2);
  auto a = Connect(*server, "cam", 10);
  auto b = Connect(*server, "lidar", 5);
  ASSERT_TRUE(a && b);
  Noop(*a, 5);  // before the trace: not in it
  auto tool = Tool(*server);
  auto cap = tool->TraceStart(4096);
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  EXPECT_GE(*cap, 4096u);
  constexpr int kM = 40;
  std::thread other([&] { Noop(*b, kM); });
  Noop(*a, kM);
  other.join();
  auto chunks = tool->TraceRead();
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  std::map<uint64_t, std::string> names;
  const std::vector<Json> records = Records(*chunks, &names);
  ASSERT_EQ(records.size(), 2u * kM);
  std::map<uint64_t, std::vector<uint64_t>> sequences;  // client -> sequences in record order
  for (const Json& r : records) {
    const uint64_t client = r[0];
    sequences[client].push_back(r[7]);
    EXPECT_EQ(r[1], getpid());
    EXPECT_EQ(r[3], "noop");
    EXPECT_EQ(r[8], "ok");
    for (int i = 9; i < 14; ++i) EXPECT_LE(r[i].get<uint64_t>(), r[i + 1].get<uint64_t>()) << r.dump();
    EXPECT_EQ(r[5], client == a->client_id() ? 0 : 1);
    EXPECT_EQ(r[2], client == a->client_id() ? 10 : 5);
  }
  EXPECT_EQ(names[a->client_id()], "cam");
  EXPECT_EQ(names[b->client_id()], "lidar");
  ASSERT_EQ(sequences.size(), 2u);
  for (const auto& [client, seq] : sequences) {
    ASSERT_EQ(seq.size(), static_cast<size_t>(kM));
    for (size_t i = 1; i < seq.size(); ++i) EXPECT_EQ(seq[i], seq[i - 1] + 1);
  }
  EXPECT_EQ(sequences[a->client_id()].front(), 6u);  // the five before the trace are not in it

  // Read again: drained. Stopped: nothing more is recorded.
  chunks = tool->TraceRead();
  ASSERT_TRUE(chunks.ok());
  EXPECT_TRUE(Records(*chunks, &names).empty());
  auto dropped = tool->TraceStop();
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 0u);
  Noop(*a, 10);
  chunks = tool->TraceRead();
  ASSERT_TRUE(chunks.ok());
  EXPECT_TRUE(Records(*chunks, &names).empty());
}

TEST(LiveStats, TraceLargerThanOneMessageAndAFullRingCountsDrops) {
  auto server = StartServer(1);
  auto a = Connect(*server, "a", 1);
  ASSERT_NE(a, nullptr);
  auto tool = Tool(*server);
  auto cap = tool->TraceStart(1);  // the smallest ring paamd makes
  ASSERT_TRUE(cap.ok());
  const int n = static_cast<int>(*cap) + 100;
  Noop(*a, n);
  auto chunks = tool->TraceRead();
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  EXPECT_GT(chunks->size(), 1u);  // more than one message's worth
  std::map<uint64_t, std::string> names;
  EXPECT_EQ(Records(*chunks, &names).size(), *cap);
  EXPECT_EQ(Json::parse(chunks->back())["dropped"], 100);
  auto dropped = tool->TraceStop();
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 100u);
}

// A tool polling and draining while the workers write: every request is counted and traced
// once, whatever the interleaving.
TEST(LiveStats, PollingAndDrainingWhileRequestsRunLosesNothing) {
  auto server = StartServer(2);
  auto a = Connect(*server, "a", 10);
  auto b = Connect(*server, "b", 5);
  ASSERT_TRUE(a && b);
  auto tool = Tool(*server);
  ASSERT_TRUE(tool->TraceStart(1 << 16).ok());
  std::atomic<bool> done{false};
  size_t traced = 0;
  std::thread poller([&] {
    auto stats_tool = Tool(*server);
    while (!done.load()) {
      const Json s = Stats(*stats_tool);
      EXPECT_LE(s["totals"]["requests_completed"].get<int>(), 400);
      std::map<uint64_t, std::string> names;
      auto chunks = tool->TraceRead();
      ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
      traced += Records(*chunks, &names).size();
    }
  });
  std::thread other([&] { Noop(*b, 200); });
  Noop(*a, 200);
  other.join();
  done = true;
  poller.join();
  std::map<uint64_t, std::string> names;
  auto chunks = tool->TraceRead();
  ASSERT_TRUE(chunks.ok());
  traced += Records(*chunks, &names).size();
  EXPECT_EQ(traced, 400u);
  const Json s = Stats(*tool);
  EXPECT_EQ((*ClientNamed(s, "a"))["requests"], 200);
  EXPECT_EQ((*ClientNamed(s, "b"))["requests"], 200);
}

TEST(LiveStats, TraceIsOffByDefaultAndOneAtATime) {
  auto server = StartServer(1);
  auto a = Connect(*server, "a", 1);
  Noop(*a, 5);
  auto tool = Tool(*server);
  auto read = tool->TraceRead();
  EXPECT_EQ(read.status().code(), Errc::kInvalidArgument) << read.status().ToString();
  ASSERT_TRUE(tool->TraceStart(0).ok());
  auto other = Tool(*server);
  auto second = other->TraceStart(0);
  EXPECT_EQ(second.status().code(), Errc::kBusy) << second.status().ToString();
  EXPECT_EQ(other->TraceStop().status().code(), Errc::kInvalidArgument);
  // The owner goes away: its trace stops (at the next second's check), and another may start.
  tool.reset();
  Status st;
  for (int i = 0; i < 100; ++i) {
    auto again = Tool(*server);
    auto started = again->TraceStart(0);
    st = started.status();
    if (st.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(LiveStats, AToolThatKeepsAskingOutlivesTheRegistrationTimeout) {
  auto server = StartServer(1, "none", /*registration_timeout_ms=*/200);
  auto tool = Tool(*server);
  ASSERT_TRUE(tool->Stats().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  auto text = tool->Stats();
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(server->Stats().connections_dropped, 0u);
}

TimingModel Timed(const std::string& chain, double segment_ms, int executor_priority) {
  TimingModel t;
  t.chain = chain;
  t.period_ms = 1000;
  t.cpu_wcet_ms = 0.1;
  t.segments_ms = {segment_ms};
  t.executor = "exec_" + chain;
  t.executor_cpu = 0;
  t.executor_priority = executor_priority;
  return t;
}

// Three buckets: under analysis the lowest is kept for registrations without a model, and the
// two chains get one each, so neither blocks the other.
TEST(LiveStats, BoundMonitorCountsRequestsOverTheAnalysedBound) {
  auto server = StartServer(3, "analysis");
  // Declares a 1 ms segment, then runs 20 ms kernels: every one breaks its bound.
  auto liar = Connect(*server, "liar", 10, Timed("fast", 1.0, 20));
  // Declares 500 ms and runs no-ops.
  auto honest = Connect(*server, "honest", 5, Timed("slow", 500.0, 10));
  ASSERT_TRUE(liar && honest);
  const uint64_t spin[4] = {20'000'000, 0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    uint64_t out = 0;
    ASSERT_TRUE(liar->Call(liar->KernelIndex("spin"), 0, spin, &out).ok());
  }
  Noop(*honest, 5);
  auto tool = Tool(*server);
  const Json s = Stats(*tool);
  const Json* l = ClientNamed(s, "liar");
  const Json* h = ClientNamed(s, "honest");
  ASSERT_TRUE(l && h);
  EXPECT_EQ((*l)["timed"], true);
  // Lemma 2 for the most urgent chain: A* (kappa 0) + blocking by the lower chain in its bucket
  // (none: a bucket per chain) + no interference; plus epsilon 0.05 ms.
  EXPECT_NEAR((*l)["bound_ms"].get<double>(), 1.05, 1e-6);
  EXPECT_EQ((*l)["violations"], 3);
  EXPECT_GE((*l)["worst_observed_ms"].get<double>(), 20.0);
  // The lower chain's bound: its own 500 ms plus the higher chain's 1 ms twice (ceil(t/T)+1
  // arrivals), plus epsilon.
  EXPECT_NEAR((*h)["bound_ms"].get<double>(), 500.0 + 2 * 1.0 + 0.05, 1e-6);
  EXPECT_EQ((*h)["violations"], 0);
  EXPECT_EQ(s["violations_total"], 3);
  EXPECT_NEAR(s["overheads"]["epsilon_ms"]["used"].get<double>(), 0.05, 1e-9);
  EXPECT_NEAR(s["overheads"]["kappa_ms"]["used"].get<double>(), 0.0, 1e-9);
}

TEST(LiveStats, BoundsFollowRegistrationsAndRemovals) {
  auto server = StartServer(3, "analysis");
  auto low = Connect(*server, "low", 5, Timed("low", 10.0, 10));
  ASSERT_NE(low, nullptr);
  auto tool = Tool(*server);
  EXPECT_NEAR((*ClientNamed(Stats(*tool), "low"))["bound_ms"].get<double>(), 10.05, 1e-6);
  auto high = Connect(*server, "high", 9, Timed("high", 2.0, 20));
  ASSERT_NE(high, nullptr);
  // Now interfered with by the higher chain's 2 ms, twice.
  EXPECT_NEAR((*ClientNamed(Stats(*tool), "low"))["bound_ms"].get<double>(), 14.05, 1e-6);
  high.reset();
  double bound = 0;
  for (int i = 0; i < 200; ++i) {  // the removal reaches the bounds at the control loop's next turn
    bound = (*ClientNamed(Stats(*tool), "low"))["bound_ms"].get<double>();
    if (std::abs(bound - 10.05) < 1e-6) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NEAR(bound, 10.05, 1e-6);
}

// The ring primitives on their own.
TEST(LiveStatsRings, TraceRingKeepsOrderAndCountsWhatItCannotHold) {
  TraceRing ring(4);
  TraceRecord r;
  for (uint64_t i = 0; i < 6; ++i) {
    r.sequence = i;
    EXPECT_EQ(ring.Push(r), i < 4);
  }
  EXPECT_EQ(ring.dropped(), 2u);
  EXPECT_EQ(ring.Size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring.Pop(&r));
    EXPECT_EQ(r.sequence, i);
  }
  EXPECT_FALSE(ring.Pop(&r));
}

TEST(LiveStatsRings, LaneWindowKeepsTheLatestSamplesOnly) {
  LaneLive lane;
  for (uint64_t i = 1; i <= kLaneWindow + 10; ++i) {
    lane.Begin();
    lane.End({i, i, i, i, i, i}, /*ok=*/i % 2 == 0, /*contended=*/false);
  }
  EXPECT_EQ(lane.served() + lane.failed(), kLaneWindow + 10);
  const std::vector<StageSample> all = lane.Window(0);
  ASSERT_EQ(all.size(), kLaneWindow);
  EXPECT_EQ(all.front().t[5], 11u);
  EXPECT_EQ(all.back().t[5], kLaneWindow + 10);
  EXPECT_EQ(lane.Window(kLaneWindow + 6).size(), 5u);
}

TEST(LiveStatsRings, ClientCountsViolationsOfItsBoundAndKeepsTheFirst) {
  ClientLive c;
  EXPECT_FALSE(c.Record(true, 100, 200));  // before its registration: counted, no latency kept
  EXPECT_TRUE(c.Latencies(0).empty());
  c.Enable();
  c.bound_ns = 50;
  EXPECT_FALSE(c.Record(true, 1000, 1040));
  EXPECT_TRUE(c.Record(false, 2000, 2070));
  EXPECT_TRUE(c.Record(true, 3000, 3090));
  EXPECT_FALSE(c.Record(true, 4000, 3000));  // a submit stamp after completion counts as 0
  EXPECT_EQ(c.requests(), 5u);
  EXPECT_EQ(c.failed(), 1u);
  EXPECT_EQ(c.violations(), 2u);
  EXPECT_EQ(c.worst_ns(), 100u);
  uint64_t observed = 0, bound = 0;
  c.FirstViolation(&observed, &bound);
  EXPECT_EQ(observed, 70u);
  EXPECT_EQ(bound, 50u);
  EXPECT_EQ(c.Latencies(0), (std::vector<uint64_t>{40, 70, 90, 0}));
  EXPECT_EQ(c.Latencies(2500), (std::vector<uint64_t>{90, 0}));  // completed at 3090 and 3000
}

TEST(LiveStatsRings, SummaryUsesNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const Summary s = Summarize(&v);
  EXPECT_EQ(s.n, 100u);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.max, 100);
  std::vector<double> empty;
  EXPECT_EQ(Summarize(&empty).n, 0u);
}

}  // namespace
}  // namespace paam
