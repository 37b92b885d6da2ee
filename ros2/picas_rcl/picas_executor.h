// picas_executor.h — PiCAS's priority-driven executor in C++, on rcl's C API (no rclcpp).
//
// The same semantics as paam.ros.PicasExecutor (python/paam/ros/executor.py), without Python:
//   - every timer and subscription carries a callback priority (larger is more critical);
//   - each time the executor picks work it polls readiness again and runs the highest-priority
//     ready callback, FIFO among equal priorities (by the wait in which it was first seen ready,
//     then by the order the entities were added);
//   - a subscription's message is taken, and a timer called, when its callback runs (as rclpy
//     does), so a KEEP_LAST(1) subscription hands its callback the newest sample.
// One thread spins it (SpinUntil); everything else is set up before.
//
// For the baselines it can also pick as rclcpp's SingleThreadedExecutor does (Order::kRclcpp,
// the stock executor of the paper's "ROS 2" method): priorities ignored, the ready timers
// first and then the ready subscriptions, each in the order added, and no new wait until
// every entity the last wait found ready has been run.
//
// Errors from rcl at set-up throw std::runtime_error with rcl's message; during the spin they do
// too (nothing is retried).
//
// Why it exists: rclcpp is not on PyPI, rcl is (ros-jazzy-rcl, pulled in by ros-jazzy-rclpy).
// The executor's own work per callback in Python (rclpy's wait, the handler task, the pick) is
// most of what the evaluation's hot-path executor spends outside callbacks
// (docs/evaluation.md, "E0's own CPU time outside callbacks").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>

namespace paam_ros {

// rcl's last error as text, and reset.
std::string RclError();
// Throws std::runtime_error("what: rcl's error") unless ret is RCL_RET_OK.
void Check(rcl_ret_t ret, const char* what);
// For clean-up calls whose failure changes nothing: drops rcl's error state.
inline void Quiet(rcl_ret_t ret) {
  if (ret != RCL_RET_OK) rcl_reset_error();
}

class PicasExecutor {
 public:
  // A subscription's callback gets the message rcl_take filled (of the subscription's type).
  using SubscriptionCallback = std::function<void(void* message)>;
  // A timer's callback gets the time its call was due (the timer's clock, ns).
  using TimerCallback = std::function<void(int64_t due_ns)>;

  enum class Order {
    kPriority,  // PiCAS: the most urgent ready callback, readiness polled before every pick
    kRclcpp,    // rclcpp's SingleThreadedExecutor: timers, then subscriptions, per wait
  };

  explicit PicasExecutor(rcl_context_t* context, Order order = Order::kPriority);
  ~PicasExecutor();
  PicasExecutor(const PicasExecutor&) = delete;
  PicasExecutor& operator=(const PicasExecutor&) = delete;

  // `subscription` and `message` (a message of its type, reused for every take) stay the
  // caller's and must outlive the executor's spin.
  void AddSubscription(rcl_subscription_t* subscription, void* message, int priority,
                       SubscriptionCallback callback);
  void AddTimer(rcl_timer_t* timer, int priority, TimerCallback callback);

  // Runs callbacks until CLOCK_MONOTONIC reaches deadline_ns (a callback running then ends
  // first). Returns the number of callbacks run. While it spins, the thread's timer slack is
  // the least (1 ns): rmw_fastrtps's zero-timeout wait, one before every pick, may otherwise
  // sleep up to the slack (50 us by default) in a thread without SCHED_FIFO.
  uint64_t SpinUntil(int64_t deadline_ns);

  // Picks so far, and those that ran no callback: a sample no longer there (another take got
  // it) or a timer cancelled meanwhile.
  uint64_t picks() const { return picks_; }
  uint64_t empty_takes() const { return empty_takes_; }

 private:
  struct Entity {
    rcl_subscription_t* subscription = nullptr;
    rcl_timer_t* timer = nullptr;
    void* message = nullptr;
    int priority = 0;
    SubscriptionCallback on_message;
    TimerCallback on_timer;
    bool pending = false;     // seen ready, its callback not run yet
    uint64_t seen_wait = 0;   // the wait in which it was first seen ready
  };

  void Wait(int64_t timeout_ns);
  bool Run(Entity& e);  // false: it ran no callback (an empty take)

  Entity* Next();  // the pending entity to run next, by the order

  rcl_context_t* context_;
  Order order_;
  std::vector<Entity> entities_;
  rcl_wait_set_t wait_set_;
  bool wait_set_ready_ = false;
  uint64_t waits_ = 0, picks_ = 0, empty_takes_ = 0;
  size_t pending_ = 0;
};

// CLOCK_MONOTONIC now, ns (rcl's steady clock reads the same clock).
int64_t MonotonicNs();

}  // namespace paam_ros
