// picas_executor.cc — see picas_executor.h.
#include "picas_executor.h"

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <stdexcept>

namespace paam_ros {

std::string RclError() {
  std::string text = rcl_get_error_string().str;
  rcl_reset_error();
  return text;
}

void Check(rcl_ret_t ret, const char* what) {
  if (ret != RCL_RET_OK) throw std::runtime_error(std::string(what) + ": " + RclError());
}

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

PicasExecutor::PicasExecutor(rcl_context_t* context, Order order)
    : context_(context), order_(order), wait_set_(rcl_get_zero_initialized_wait_set()) {}

PicasExecutor::~PicasExecutor() {
  if (wait_set_ready_) Quiet(rcl_wait_set_fini(&wait_set_));
}

void PicasExecutor::AddSubscription(rcl_subscription_t* subscription, void* message, int priority,
                                    SubscriptionCallback callback) {
  if (wait_set_ready_) throw std::logic_error("PicasExecutor: add entities before spinning");
  Entity e;
  e.subscription = subscription;
  e.message = message;
  e.priority = priority;
  e.on_message = std::move(callback);
  entities_.push_back(std::move(e));
}

void PicasExecutor::AddTimer(rcl_timer_t* timer, int priority, TimerCallback callback) {
  if (wait_set_ready_) throw std::logic_error("PicasExecutor: add entities before spinning");
  Entity e;
  e.timer = timer;
  e.priority = priority;
  e.on_timer = std::move(callback);
  entities_.push_back(std::move(e));
}

void PicasExecutor::Wait(int64_t timeout_ns) {
  if (!wait_set_ready_) {
    size_t subs = 0, timers = 0;
    for (const Entity& e : entities_) (e.timer ? timers : subs)++;
    Check(rcl_wait_set_init(&wait_set_, subs, 0, timers, 0, 0, 0, context_,
                            rcl_get_default_allocator()),
          "rcl_wait_set_init");
    wait_set_ready_ = true;
  }
  Check(rcl_wait_set_clear(&wait_set_), "rcl_wait_set_clear");
  for (Entity& e : entities_) {
    if (e.timer) {
      Check(rcl_wait_set_add_timer(&wait_set_, e.timer, nullptr), "rcl_wait_set_add_timer");
    } else {
      Check(rcl_wait_set_add_subscription(&wait_set_, e.subscription, nullptr),
            "rcl_wait_set_add_subscription");
    }
  }
  const rcl_ret_t ret = rcl_wait(&wait_set_, timeout_ns);
  if (ret == RCL_RET_TIMEOUT) {
    rcl_reset_error();
    return;
  }
  Check(ret, "rcl_wait");
  ++waits_;
  size_t s = 0, t = 0;
  for (Entity& e : entities_) {
    const bool ready = e.timer ? wait_set_.timers[t++] != nullptr
                               : wait_set_.subscriptions[s++] != nullptr;
    if (ready && !e.pending) {
      e.pending = true;
      e.seen_wait = waits_;
      ++pending_;
    }
  }
}

bool PicasExecutor::Run(Entity& e) {
  e.pending = false;
  --pending_;
  ++picks_;
  if (e.timer) {
    rcl_timer_call_info_t info{};
    const rcl_ret_t ret = rcl_timer_call_with_info(e.timer, &info);
    if (ret == RCL_RET_TIMER_CANCELED) {
      rcl_reset_error();
      ++empty_takes_;
      return false;
    }
    Check(ret, "rcl_timer_call_with_info");
    e.on_timer(info.expected_call_time);
    return true;
  }
  rmw_message_info_t info = rmw_get_zero_initialized_message_info();
  const rcl_ret_t ret = rcl_take(e.subscription, e.message, &info, nullptr);
  if (ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
    rcl_reset_error();
    ++empty_takes_;
    return false;
  }
  Check(ret, "rcl_take");
  e.on_message(e.message);
  return true;
}

PicasExecutor::Entity* PicasExecutor::Next() {
  Entity* best = nullptr;
  for (Entity& e : entities_) {
    if (!e.pending) continue;
    if (order_ == Order::kRclcpp) {
      if (e.timer) return &e;  // the first ready timer, else the first ready subscription
      if (!best) best = &e;
      continue;
    }
    if (!best || e.priority > best->priority ||
        (e.priority == best->priority && e.seen_wait < best->seen_wait)) {
      best = &e;
    }
  }
  return best;
}

namespace {

// The calling thread's timer slack at its least for a scope, then back (where prctl works).
class LeastTimerSlack {
 public:
  LeastTimerSlack() : before_(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)) {
    if (before_ > 1) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  }
  ~LeastTimerSlack() {
    if (before_ > 1) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(before_), 0, 0, 0);
  }
  LeastTimerSlack(const LeastTimerSlack&) = delete;
  LeastTimerSlack& operator=(const LeastTimerSlack&) = delete;

 private:
  int before_;  // (prctl's int: -1 on error, left alone then)
};

}  // namespace

uint64_t PicasExecutor::SpinUntil(int64_t deadline_ns) {
  const LeastTimerSlack slack;
  uint64_t ran = 0;
  // (a blocking wait ends at least this often, so the deadline is seen)
  constexpr int64_t kMaxBlockNs = 50'000'000;
  for (;;) {
    const int64_t now = MonotonicNs();
    if (now >= deadline_ns) break;
    // PiCAS polls readiness again before every pick, rclcpp's order only once the last wait's
    // work is done; without pending work the wait may sleep.
    if (order_ == Order::kPriority || !pending_) {
      Wait(pending_ ? 0 : std::min(kMaxBlockNs, deadline_ns - now));
    }
    if (!pending_) continue;
    ran += Run(*Next()) ? 1 : 0;
  }
  return ran;
}

}  // namespace paam_ros
