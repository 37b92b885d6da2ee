// paam_cs2_executor — one executor process of case study 2 (the Autoware reference system), its
// nodes and their callbacks in C++ on rcl, spun by paam_ros::PicasExecutor (for the ROS 2
// method in rclcpp's SingleThreadedExecutor order).
//
// experiments/paam_experiments/case_study2/ builds the reference system (graph.py) and stays the
// one place that says what each node does (nodes.py): it writes this program's spec (cpp.py,
// `paam eval case-study-2 --e0-executor cpp`), starts it, and turns what it records into the
// same records as its own rclpy executor processes. The callbacks do what nodes.py's do, in the
// same order: take the sample history (std_msgs/Int64MultiArray: per node id, its stamp,
// sequence number and missed samples), burn the run time as this thread's CPU time, run the GPU
// segment (and the rear transformer's TPU one) through paamd or directly, stamp and publish.
//
// Usage: paam_cs2_executor SPEC   (the spec's format: ReadSpec below)
// Protocol on stdout/stdin: prints "ready" once every node, client and DDS thread is up; reads
// "start <CLOCK_MONOTONIC ns>", sleeps until then, starts the timers, spins until the run's end;
// writes the records to the spec's `out` file and prints "done". Errors: a line
// "error: ..." on stderr and exit status 1 (2: bad arguments).
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <rcl/rcl.h>
#include <rosidl_typesupport_cpp/message_type_support.hpp>
#include <std_msgs/msg/int64_multi_array.hpp>

#include "common/cli.h"
#include "paam/client.h"
#include "picas_executor.h"

namespace {

using Msg = std_msgs::msg::Int64MultiArray;
using paam_ros::Check;
using paam_ros::MonotonicNs;
using paam_ros::Quiet;

constexpr int64_t kNoStamp = -(int64_t{1} << 62);  // case_study2.records.NO_STAMP
constexpr int64_t kCallsBeforeNs = 1'000'000'000;   // case_study2.records.CALLS_BEFORE_NS
constexpr int kMaxNodes = 64;

// ---------------------------------------------------------------------------------- the spec

// One callback: a timer (a sensor's) or a subscription. Run times in ms.
struct CallbackSpec {
  int index = 0;            // the node's callback index (the intersection's connection)
  std::string in_topic;     // "-": a timer
  int producer = -1;        // node id that publishes in_topic
  double run_ms = 0;        // the work's run time (a fusion: the fusing callback's)
  double cache_ms = 0;      // a fusion: an input that only caches its sample
  int chain_priority = 0;
  int picas_priority = 0;   // the executor's callback priority
  int request_priority = 0; // what paamd ranks its GPU requests by
  std::string out_topic;    // "-": none (the estimator's output is published all the same)
};

struct NodeSpec {
  int id = -1;
  std::string name, kind;   // sensor | transform | fusion | intersection
  double period_ms = 0;
  bool gpu = false, tpu = false;
  std::vector<CallbackSpec> callbacks;
};

struct Spec {
  std::string prefix, method, backend, gpu_socket, tpu_socket, wait = "suspend", out;
  std::string hot_wait;   // how the hot path's callbacks wait (chain priority hot_priority); "": wait
  int hot_priority = -1;
  double gpu_ms = 0, tpu_ms = 0, scale = 1, warmup_s = 0, duration_s = 0;
  int device_cpu = -1, tpu_cpu = -1, tpu_priority = 0;
  bool drop_gpu = false, drop_tpu = false;
  std::vector<std::string> stages;  // the timestamp fields of gpu_stages, in order
  std::vector<NodeSpec> nodes;      // in the executor's node order
  std::vector<int> hot_ids, hot_hops;
  int front = -1, rear = -1, estimator = -1;
};

[[noreturn]] void Usage(const std::string& why) {
  std::cerr << "error: " << why << "\nusage: paam_cs2_executor SPEC\n";
  std::exit(2);
}

// The spec: one "key values..." per line.
//   prefix P | method ros2|picas|paam | backend cpu|cuda | wait suspend|spin|hybrid | out PATH
//   hot_wait suspend|spin|hybrid | hot_priority N   (optional: the hot path's callbacks' wait)
//   gpu_ms F | tpu_ms F | scale F | warmup_s F | duration_s F
//   device_cpu N | tpu_cpu N | tpu_priority N | drop_gpu 0|1 | drop_tpu 0|1
//   gpu_socket PATH|- | tpu_socket PATH|- | stages NAME... | hot_ids ID... | hot_hops ID...
//   lidars FRONT_ID REAR_ID | estimator ID
//   node ID NAME KIND PERIOD_MS GPU TPU
//   cb NODE_ID INDEX IN_TOPIC PRODUCER RUN_MS CACHE_MS CHAIN PICAS REQUEST OUT_TOPIC
Spec ReadSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) Usage("cannot read the spec " + path);
  Spec s;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream f(line);
    std::string key;
    if (!(f >> key) || key[0] == '#') continue;
    auto ints = [&f] {
      std::vector<int> v;
      for (int x; f >> x;) v.push_back(x);
      return v;
    };
    if (key == "prefix") f >> s.prefix;
    else if (key == "method") f >> s.method;
    else if (key == "backend") f >> s.backend;
    else if (key == "wait") f >> s.wait;
    else if (key == "hot_wait") f >> s.hot_wait;
    else if (key == "hot_priority") f >> s.hot_priority;
    else if (key == "out") f >> s.out;
    else if (key == "gpu_ms") f >> s.gpu_ms;
    else if (key == "tpu_ms") f >> s.tpu_ms;
    else if (key == "scale") f >> s.scale;
    else if (key == "warmup_s") f >> s.warmup_s;
    else if (key == "duration_s") f >> s.duration_s;
    else if (key == "device_cpu") f >> s.device_cpu;
    else if (key == "tpu_cpu") f >> s.tpu_cpu;
    else if (key == "tpu_priority") f >> s.tpu_priority;
    else if (key == "drop_gpu") f >> s.drop_gpu;
    else if (key == "drop_tpu") f >> s.drop_tpu;
    else if (key == "gpu_socket") f >> s.gpu_socket;
    else if (key == "tpu_socket") f >> s.tpu_socket;
    else if (key == "stages") for (std::string x; f >> x;) s.stages.push_back(x);
    else if (key == "hot_ids") s.hot_ids = ints();
    else if (key == "hot_hops") s.hot_hops = ints();
    else if (key == "lidars") f >> s.front >> s.rear;
    else if (key == "estimator") f >> s.estimator;
    else if (key == "node") {
      NodeSpec n;
      f >> n.id >> n.name >> n.kind >> n.period_ms >> n.gpu >> n.tpu;
      if (n.id < 0 || n.id >= kMaxNodes) Usage("node id out of range in line " + std::to_string(number));
      s.nodes.push_back(n);
    } else if (key == "cb") {
      int node = -1;
      CallbackSpec c;
      f >> node >> c.index >> c.in_topic >> c.producer >> c.run_ms >> c.cache_ms >>
          c.chain_priority >> c.picas_priority >> c.request_priority >> c.out_topic;
      NodeSpec* owner = nullptr;
      for (NodeSpec& n : s.nodes) if (n.id == node) owner = &n;
      if (!owner) Usage("cb before its node in line " + std::to_string(number));
      owner->callbacks.push_back(c);
    } else {
      Usage("unknown key '" + key + "' in line " + std::to_string(number));
    }
    if (f.fail() && !f.eof()) Usage("bad value in line " + std::to_string(number));
  }
  if (s.method != "ros2" && s.method != "picas" && s.method != "paam") {
    Usage("method must be ros2, picas or paam");
  }
  if (s.out.empty() || s.prefix.empty() || s.nodes.empty()) Usage("spec lacks out, prefix or nodes");
  return s;
}

// ------------------------------------------------------------------------- sample histories

struct Entry {
  bool present = false;
  int64_t stamp = 0, seq = 0, miss = 0;
};
using History = std::array<Entry, kMaxNodes>;

void Parse(const Msg& m, History& h) {
  h = History{};
  const auto& d = m.data;
  for (size_t i = 0; i + 3 < d.size(); i += 4) {
    if (d[i] < 0 || d[i] >= kMaxNodes) continue;
    h[d[i]] = Entry{true, d[i + 1], d[i + 2], d[i + 3]};
  }
}

void Pack(const History& h, Msg& m) {
  m.data.clear();
  for (int k = 0; k < kMaxNodes; ++k) {
    if (!h[k].present) continue;
    m.data.insert(m.data.end(), {k, h[k].stamp, h[k].seq, h[k].miss});
  }
}

// case_study2.nodes.merge_history: per node, the later stamp wins.
void Merge(History& into, const History& other) {
  for (int k = 0; k < kMaxNodes; ++k) {
    if (other[k].present && (!into[k].present || other[k].stamp > into[k].stamp)) into[k] = other[k];
  }
}

// ---------------------------------------------------------------------------- the recording

int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// common.ThreadSchedStat: the thread's CPU time and its time runnable but waiting (schedstat).
class SchedStat {
 public:
  SchedStat() : fd_(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~SchedStat() { if (fd_ >= 0) close(fd_); }
  std::pair<int64_t, int64_t> Read() const {
    if (fd_ < 0) return {-1, -1};
    char buf[96];
    const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return {-1, -1};
    buf[n] = 0;
    unsigned long long on_cpu = 0, waited = 0;
    if (std::sscanf(buf, "%llu %llu", &on_cpu, &waited) != 2) return {-1, -1};
    return {ThreadCpuNs(), static_cast<int64_t>(waited)};
  }

 private:
  int fd_;
};

struct Records {
  int64_t record_from = int64_t{1} << 62;
  std::vector<std::vector<int64_t>> hot, calls, gpu_stages;
  std::vector<double> excess, gpu_wall;
  std::map<std::string, int64_t> sub_drops;
  int64_t published[2] = {0, 0};
  std::map<int64_t, int64_t> due[2];  // per lidar: sequence number -> its timer's due time
};

// --------------------------------------------------------------------------- the accelerators

// How a PAAM callback of `chain_priority` waits for its requests: the hot path's hot_wait where
// the spec gives one, else wait.
const std::string& WaitOf(const Spec& s, int chain_priority) {
  return !s.hot_wait.empty() && chain_priority == s.hot_priority ? s.hot_wait : s.wait;
}

std::unique_ptr<paam::Client> Connect(const Spec& s, bool tpu, int priority, const std::string& wait,
                                      const std::string& name) {
  paam::ClientOptions o;
  o.name = name;
  o.kernels = {paam::KernelDecl{"spin", 0, 8, std::nullopt}};
  if (s.method == "paam") {
    o.priority = static_cast<uint32_t>(priority);
    o.socket_path = tpu ? s.tpu_socket : s.gpu_socket;
    o.wait = wait == "spin" ? paam::WaitMode::kSpin
             : wait == "hybrid" ? paam::WaitMode::kHybrid : paam::WaitMode::kSuspend;
  } else {  // direct invocation, as case_study2.callbacks.ProcessGraph._gpu_client/_tpu_client
    o.priority = tpu ? 0 : static_cast<uint32_t>(priority);
    o.direct = true;
    o.direct_backend = tpu ? "cpu" : s.backend;
    o.direct_device_cpu = tpu ? s.tpu_cpu : s.device_cpu;
    o.wait = paam::WaitMode::kSuspend;
  }
  auto c = paam::Client::Connect(o);
  if (!c.ok()) throw std::runtime_error("client " + name + ": " + c.status().ToString());
  return std::move(c.value());
}

// A direct kernel on the CPU runs on the calling thread: at SCHED_OTHER nice 0 meanwhile
// (case_study2.callbacks.ProcessGraph._blocking_segment).
class DroppedPriority {
 public:
  explicit DroppedPriority(bool drop) : drop_(drop) {
    if (!drop_) return;
    policy_ = sched_getscheduler(0);
    sched_getparam(0, &param_);
    errno = 0;
    nice_ = getpriority(PRIO_PROCESS, 0);
    sched_param zero{};
    if (policy_ != SCHED_OTHER) sched_setscheduler(0, SCHED_OTHER, &zero);
    if (nice_ != 0) setpriority(PRIO_PROCESS, 0, 0);
  }
  ~DroppedPriority() {
    if (!drop_) return;
    if (policy_ != SCHED_OTHER) sched_setscheduler(0, policy_, &param_);
    if (nice_ != 0) setpriority(PRIO_PROCESS, 0, nice_);
  }
  DroppedPriority(const DroppedPriority&) = delete;
  DroppedPriority& operator=(const DroppedPriority&) = delete;

 private:
  bool drop_;
  int policy_ = SCHED_OTHER, nice_ = 0;
  sched_param param_{};
};

// One callback's work (case_study2.callbacks.ProcessGraph.work_fn): the burn, then the segments.
class Work {
 public:
  Work(const Spec& s, Records& r, const NodeSpec& node, const CallbackSpec& cb, double run_ms)
      : spec_(s), rec_(r), chain_priority_(cb.chain_priority), wait_(WaitOf(s, cb.chain_priority)),
        cpu_ns_(std::llround(run_ms * s.scale * 1e6)) {
    const std::string name = node.name + "." + std::to_string(cb.index);
    if (node.gpu) gpu_ = Connect(s, false, cb.request_priority, wait_, name);
    if (node.gpu && node.tpu) tpu_ = Connect(s, true, s.tpu_priority, wait_, node.name + ".tpu");
  }

  // Returns the CPU time spent in the burn (ns).
  int64_t operator()() {
    const int64_t c0 = ThreadCpuNs();
    while (ThreadCpuNs() - c0 < cpu_ns_) {
    }
    const int64_t c_seg = ThreadCpuNs();
    if (gpu_) {
      const int64_t g0 = MonotonicNs();
      Segment(*gpu_, spec_.gpu_ms, spec_.drop_gpu);
      if (g0 >= rec_.record_from) {
        rec_.gpu_wall.push_back((MonotonicNs() - g0) / 1e6);
        if (spec_.method == "paam") Stamps(*gpu_);
      }
    }
    if (tpu_) Segment(*tpu_, spec_.tpu_ms, spec_.drop_tpu);
    if (spec_.method == "paam" && MonotonicNs() >= rec_.record_from) {
      // CPU time beyond the burn; a spinning wait's is not counted (as in case_study2)
      const int64_t now = ThreadCpuNs();
      const int64_t spun = wait_ != "suspend" ? now - c_seg : 0;
      rec_.excess.push_back((now - c0 - spun) / 1e6 - cpu_ns_ / 1e6);
    }
    return c_seg - c0;
  }

 private:
  void Segment(paam::Client& c, double ms, bool drop) {
    if (ms <= 0) return;
    const uint64_t params[4] = {static_cast<uint64_t>(std::llround(ms * 1e6)), 0, 0, 0};
    uint64_t out = 0;
    paam::Status st;
    {
      DroppedPriority dropped(drop);
      st = c.Call(0, 0, params, &out);
    }
    if (!st.ok()) throw std::runtime_error("segment: " + st.ToString());
  }

  void Stamps(const paam::Client& c) {
    const paam::RequestTimestamps t = c.Timestamps(0);
    std::vector<int64_t> row{chain_priority_};
    for (const std::string& k : spec_.stages) {
      const uint64_t v = k == "submitted" ? t.submitted : k == "dequeued" ? t.dequeued
                         : k == "picked" ? t.picked : k == "device_start" ? t.device_start
                         : k == "device_end" ? t.device_end : k == "completed" ? t.completed
                         : k == "woken" ? t.woken : 0;
      row.push_back(static_cast<int64_t>(v));
    }
    rec_.gpu_stages.push_back(std::move(row));
  }

  const Spec& spec_;
  Records& rec_;
  int64_t chain_priority_;
  std::string wait_;  // how its PAAM requests wait (WaitOf)
  int64_t cpu_ns_;
  std::unique_ptr<paam::Client> gpu_, tpu_;
};

// ------------------------------------------------------------------------------- the nodes

struct Publisher {
  rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
  Msg msg;
};

struct Subscription {
  rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
  Msg msg;
};

class Graph {
 public:
  Graph(const Spec& s, rcl_context_t* ctx, paam_ros::PicasExecutor& ex)
      : spec_(s), ctx_(ctx), ex_(ex) {
    clock_ = std::make_unique<rcl_clock_t>();
    rcl_allocator_t alloc = rcl_get_default_allocator();
    Check(rcl_clock_init(RCL_STEADY_TIME, clock_.get(), &alloc), "rcl_clock_init");
    for (const NodeSpec& n : s.nodes) Build(n);
  }

  ~Graph() {
    // (errors at the end change nothing: the records are written)
    for (auto& [node, sub] : subs_) Quiet(rcl_subscription_fini(&sub->sub, node));
    for (auto& [node, pub] : pubs_) Quiet(rcl_publisher_fini(&pub->pub, node));
    for (auto& t : timers_) Quiet(rcl_timer_fini(t.get()));
    for (auto& n : nodes_) Quiet(rcl_node_fini(n.get()));
    if (clock_) Quiet(rcl_clock_fini(clock_.get()));
  }

  void StartTimers() {
    for (auto& t : timers_) Check(rcl_timer_reset(t.get()), "rcl_timer_reset");
  }

  Records& records() { return rec_; }
  const SchedStat& sched() const { return sched_; }

 private:
  struct State {
    int64_t seq = 0, missing = 0;
    std::map<std::string, std::optional<int64_t>> last_in;
  };

  rcl_node_t* NewNode(const std::string& name) {
    auto node = std::make_unique<rcl_node_t>(rcl_get_zero_initialized_node());
    rcl_node_options_t o = rcl_node_get_default_options();
    const std::string ns = "/cs2_" + std::to_string(getpid());
    Check(rcl_node_init(node.get(), name.c_str(), ns.c_str(), ctx_, &o), "rcl_node_init");
    nodes_.push_back(std::move(node));
    return nodes_.back().get();
  }

  static rmw_qos_profile_t Qos() {  // KEEP_LAST(1), reliable
    rmw_qos_profile_t q = rmw_qos_profile_default;
    q.history = RMW_QOS_POLICY_HISTORY_KEEP_LAST;
    q.depth = 1;
    q.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
    return q;
  }

  std::string Topic(const std::string& t) const { return spec_.prefix + "/" + t; }

  Publisher* NewPublisher(rcl_node_t* node, const std::string& topic) {
    auto p = std::make_unique<Publisher>();
    rcl_publisher_options_t o = rcl_publisher_get_default_options();
    o.qos = Qos();
    Check(rcl_publisher_init(&p->pub, node, rosidl_typesupport_cpp::get_message_type_support_handle<Msg>(),
                             Topic(topic).c_str(), &o),
          "rcl_publisher_init");
    pubs_.emplace_back(node, std::move(p));
    return pubs_.back().second.get();
  }

  void Send(Publisher* p, const History& h) {
    Pack(h, p->msg);
    Check(rcl_publish(&p->pub, &p->msg, nullptr), "rcl_publish");
  }

  // case_study2.callbacks.ProcessGraph._callback: every callback of this executor noted with when it ran.
  template <typename F>
  auto Noted(int64_t chain_priority, F body) {
    return [this, chain_priority, body](auto... args) mutable {
      const auto s0 = sched_.Read();
      const int64_t t0 = MonotonicNs();
      const int64_t burn = body(args...);
      if (t0 >= rec_.record_from - kCallsBeforeNs) {
        const int64_t t1 = MonotonicNs();
        const auto s1 = sched_.Read();
        rec_.calls.push_back({t0, t1, chain_priority, s0.first, s0.second, s1.first, s1.second,
                              burn, -1, -1});
      }
    };
  }

  void Subscribe(rcl_node_t* node, const CallbackSpec& cb,
                 std::function<int64_t(const Msg&)> body) {
    auto s = std::make_unique<Subscription>();
    rcl_subscription_options_t o = rcl_subscription_get_default_options();
    o.qos = Qos();
    Check(rcl_subscription_init(&s->sub, node,
                                rosidl_typesupport_cpp::get_message_type_support_handle<Msg>(),
                                Topic(cb.in_topic).c_str(), &o),
          "rcl_subscription_init");
    auto noted = Noted(cb.chain_priority, [body](void* m) { return body(*static_cast<Msg*>(m)); });
    ex_.AddSubscription(&s->sub, &s->msg, cb.picas_priority, noted);
    subs_.emplace_back(node, std::move(s));
  }

  int64_t Missing(const NodeSpec& n, State& st, const CallbackSpec& cb, const History& h) {
    const Entry& e = h[cb.producer];
    std::optional<int64_t> seq;
    if (e.present) seq = e.seq;
    std::optional<int64_t>& last = st.last_in[cb.in_topic];
    const std::optional<int64_t> before = last;
    last = seq;
    if (!seq || !before) return 0;
    const int64_t gap = std::max<int64_t>(0, *seq - *before - 1);
    if (gap && MonotonicNs() >= rec_.record_from) rec_.sub_drops[n.name + "<-" + cb.in_topic] += gap;
    return gap;
  }

  void Build(const NodeSpec& n) {
    rcl_node_t* node = NewNode(n.name);
    auto st = std::make_shared<State>();
    const int me = n.id;
    if (n.kind == "sensor") {
      const CallbackSpec& cb = n.callbacks.at(0);
      Publisher* pub = NewPublisher(node, n.name);
      auto work = std::make_shared<Work>(spec_, rec_, n, cb, cb.run_ms);
      const int lidar = me == spec_.front ? 0 : me == spec_.rear ? 1 : -1;
      auto timer = std::make_unique<rcl_timer_t>(rcl_get_zero_initialized_timer());
      Check(rcl_timer_init2(timer.get(), clock_.get(), ctx_, std::llround(n.period_ms * 1e6), nullptr,
                            rcl_get_default_allocator(), false),
            "rcl_timer_init2");
      auto body = [this, work, st, pub, me, lidar](int64_t due) -> int64_t {
        const int64_t t0 = MonotonicNs();
        const int64_t burn = (*work)();
        st->seq += 1;
        History h{};
        h[me] = Entry{true, t0, st->seq, 0};
        Send(pub, h);
        if (lidar >= 0) {
          auto& dues = rec_.due[lidar];
          dues[st->seq] = due;
          dues.erase(st->seq - 50);  // a sample older than 5 s fuses no more
          if (t0 >= rec_.record_from) rec_.published[lidar] += 1;
        }
        return burn;
      };
      ex_.AddTimer(timer.get(), cb.picas_priority, Noted(cb.chain_priority, body));
      timers_.push_back(std::move(timer));
    } else if (n.kind == "transform") {
      const CallbackSpec& cb = n.callbacks.at(0);
      Publisher* pub = NewPublisher(node, n.name);
      auto work = std::make_shared<Work>(spec_, rec_, n, cb, cb.run_ms);
      const bool estimator = me == spec_.estimator;
      Subscribe(node, cb, [this, work, st, pub, me, estimator, &n, cb](const Msg& m) -> int64_t {
        const int64_t t0 = MonotonicNs();
        History h;
        Parse(m, h);
        const int64_t miss = Missing(n, *st, cb, h);
        const int64_t burn = (*work)();
        st->seq += 1;
        h[me] = Entry{true, MonotonicNs(), st->seq, miss};
        Send(pub, h);
        if (estimator) Hot(h, t0);
        return burn;
      });
    } else if (n.kind == "fusion") {
      Publisher* pub = NewPublisher(node, n.name);
      const size_t inputs = n.callbacks.size();
      auto cache = std::make_shared<std::vector<std::optional<History>>>(inputs);
      auto fuse = std::make_shared<Work>(spec_, rec_, n, n.callbacks[0], n.callbacks[0].run_ms);
      for (size_t i = 0; i < inputs; ++i) {
        const CallbackSpec& cb = n.callbacks[i];
        auto cache_work = std::make_shared<Work>(spec_, rec_, n, cb, cb.cache_ms);
        Subscribe(node, cb, [this, fuse, cache_work, cache, st, pub, me, i, &n](const Msg& m) -> int64_t {
          History h;
          Parse(m, h);
          (*cache)[i] = h;
          for (const auto& c : *cache) {
            if (!c) return (*cache_work)();
          }
          const int64_t burn = (*fuse)();
          // the reference system's count at a fusion: each input's gap since its last fusion
          int64_t miss = 0;
          for (size_t j = 0; j < cache->size(); ++j) miss += Missing(n, *st, n.callbacks[j], *(*cache)[j]);
          History merged{};
          for (const auto& c : *cache) Merge(merged, *c);
          for (auto& c : *cache) c.reset();
          st->seq += 1;
          merged[me] = Entry{true, MonotonicNs(), st->seq, miss};
          Send(pub, merged);
          return burn;
        });
      }
    } else if (n.kind == "intersection") {
      for (const CallbackSpec& cb : n.callbacks) {
        Publisher* pub = NewPublisher(node, cb.out_topic);
        auto work = std::make_shared<Work>(spec_, rec_, n, cb, cb.run_ms);
        auto conn = std::make_shared<int64_t>(0);
        Subscribe(node, cb, [this, work, st, pub, me, conn, &n, cb](const Msg& m) -> int64_t {
          History h;
          Parse(m, h);
          const int64_t miss = Missing(n, *st, cb, h);
          const int64_t burn = (*work)();
          *conn += 1;
          h[me] = Entry{true, MonotonicNs(), *conn, miss};
          Send(pub, h);
          return burn;
        });
      }
    } else {
      throw std::runtime_error("node " + n.name + ": kind " + n.kind + " is not run in C++");
    }
  }

  // case_study2.nodes.record_hot_instance: one hot-path instance, at the estimator's end.
  void Hot(const History& h, int64_t estimator_start) {
    const int64_t end = MonotonicNs();
    const Entry& f = h[spec_.front];
    const Entry& r = h[spec_.rear];
    if (!f.present || !r.present) return;
    const int64_t start = std::max(f.stamp, r.stamp);
    if (start < rec_.record_from) return;
    int64_t miss = 0;
    for (int k : spec_.hot_ids) if (h[k].present) miss += h[k].miss;
    const int64_t gap = start - std::min(f.stamp, r.stamp);
    int64_t phase = kNoStamp, late = kNoStamp;
    const auto df = rec_.due[0].find(f.seq), dr = rec_.due[1].find(r.seq);
    if (df != rec_.due[0].end() && dr != rec_.due[1].end()) {
      phase = std::llabs(df->second - dr->second);
      late = start - (f.stamp >= r.stamp ? df->second : dr->second);
    }
    std::vector<int64_t> row{end, end - start, miss, f.seq, r.seq, estimator_start - start, gap, phase, late};
    for (int k : spec_.hot_hops) row.push_back(h[k].present ? h[k].stamp - start : kNoStamp);
    row.push_back(f.stamp >= r.stamp ? 1 : 0);
    rec_.hot.push_back(std::move(row));
  }

  const Spec& spec_;
  rcl_context_t* ctx_;
  paam_ros::PicasExecutor& ex_;
  std::unique_ptr<rcl_clock_t> clock_;
  std::vector<std::unique_ptr<rcl_node_t>> nodes_;
  std::vector<std::unique_ptr<rcl_timer_t>> timers_;
  std::vector<std::pair<rcl_node_t*, std::unique_ptr<Publisher>>> pubs_;
  std::vector<std::pair<rcl_node_t*, std::unique_ptr<Subscription>>> subs_;
  Records rec_;
  SchedStat sched_;
};

// ---------------------------------------------------------------------------------- output

void WriteRecords(const std::string& path, const Records& r, uint64_t picks, uint64_t empty) {
  const nlohmann::ordered_json records = {{"hot", r.hot},
                                          {"calls", r.calls},
                                          {"gpu_stages", r.gpu_stages},
                                          {"excess", r.excess},
                                          {"gpu_wall", r.gpu_wall},
                                          {"published", {r.published[0], r.published[1]}},
                                          {"sub_drops", r.sub_drops},
                                          {"picks", picks},
                                          {"empty_takes", empty}};
  std::ofstream o(path + ".tmp");
  o << records.dump() << "\n";
  o.close();
  if (!o || std::rename((path + ".tmp").c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot write " + path);
  }
}

int Main(int argc, char** argv) {
  std::string spec_path;
  CLI::App app("One executor process of case study 2: its nodes and callbacks on rcl, as the spec\n"
               "says (written by paam eval case-study-2 --e0-executor cpp).",
               "paam_cs2_executor");
  paam::cli::Setup(app);
  app.add_option("SPEC", spec_path, "the spec file")->type_name("")->required();
  paam::cli::ParseOrExit(app, argc, argv, 2);
  const Spec spec = ReadSpec(spec_path);

  rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
  Check(rcl_init_options_init(&init_options, rcl_get_default_allocator()), "rcl_init_options_init");
  rcl_context_t context = rcl_get_zero_initialized_context();
  Check(rcl_init(0, nullptr, &init_options, &context), "rcl_init");
  int status = 0;
  {
    // ROS 2: the stock executor's order (rclcpp's SingleThreadedExecutor), priorities unused
    paam_ros::PicasExecutor ex(&context, spec.method == "ros2" ? paam_ros::PicasExecutor::Order::kRclcpp
                                                               : paam_ros::PicasExecutor::Order::kPriority);
    Graph graph(spec, &context, ex);
    std::cout << "ready" << std::endl;

    std::string word;
    int64_t start = 0;
    if (!(std::cin >> word >> start) || word != "start") throw std::runtime_error("no start line on stdin");
    const int64_t left = start - MonotonicNs();
    if (left > 0) {
      const timespec ts{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
      nanosleep(&ts, nullptr);
    }
    start = MonotonicNs();
    graph.StartTimers();
    Records& rec = graph.records();
    rec.record_from = start + std::llround(spec.warmup_s * 1e9);
    const int64_t end = start + std::llround((spec.warmup_s + spec.duration_s) * 1e9);
    ex.SpinUntil(end);
    WriteRecords(spec.out, rec, ex.picks(), ex.empty_takes());
    std::cout << "done" << std::endl;
  }
  if (rcl_shutdown(&context) != RCL_RET_OK) status = 1;
  Quiet(rcl_context_fini(&context));
  Quiet(rcl_init_options_fini(&init_options));
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
