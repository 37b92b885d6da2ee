// server/bucket_queue.h — one bucket's priority queue of requests.
//
// Thread safety: all methods are safe from any thread (internally locked; the lock is never
// held across a device call). Invariants: `size_` equals heap_.size() whenever mu_ is free;
// the heap never reallocates after construction (capacity fixed), so Push allocates nothing.
// Order (QueueOrder, paamd --queue):
//   kPriority (fifo): larger chain priority first; FIFO (by `order`) among equal priorities.
//   kEdf: earlier absolute deadline (`due_ns`) first; FIFO among equal deadlines. Requests
//         without a deadline come after every request with one, in kPriority's order.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "shm/layout.h"

namespace paam {

struct Session;
struct RegionSlot;

enum class QueueOrder { kPriority, kEdf };

struct QueueEntry {
  uint32_t priority = 0;   // chain priority, fixed at registration
  uint64_t order = 0;      // global arrival counter, for FIFO among equals
  Session* session = nullptr;
  RegionSlot* region = nullptr;
  uint64_t sequence = 0;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
  uint64_t params[4] = {0, 0, 0, 0};
  uint64_t submit_ns = 0;
  uint64_t dequeue_ns = 0;
  bool device_data = false;  // shm::kFlagDeviceData, validated against the region's registration
  uint64_t time_limit_ns = 0;         // the client's own limit (0: none), for messages
  uint64_t deadline_ns = UINT64_MAX;  // stopped (kCancelled) if not finished by then (cancel.cc)
  // The absolute deadline (RequestDue): release + the registration's relative deadline;
  // UINT64_MAX: none. The key of kEdf, and what the fallback policy compares with the queue.
  uint64_t due_ns = UINT64_MAX;
  bool fallback = false;  // routed to the CPU fallback (fallback.h), not its bucket's device
};

class BucketQueue {
 public:
  explicit BucketQueue(size_t capacity, QueueOrder order = QueueOrder::kPriority)
      : capacity_(capacity), less_{order == QueueOrder::kEdf} {
    heap_.reserve(capacity);
  }

  // False when full (the caller fails the request with kResourceExhausted).
  [[nodiscard]] bool TryPush(const QueueEntry& e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (heap_.size() >= capacity_) return false;
      heap_.push_back(e);
      std::push_heap(heap_.begin(), heap_.end(), less_);
      size_.store(static_cast<uint32_t>(heap_.size()), std::memory_order_release);
      if (sleepers_ == 0) return true;
    }
    cv_.notify_one();
    return true;
  }

  // Pops the most urgent entry without blocking.
  [[nodiscard]] bool TryPop(QueueEntry* out) {
    if (size_.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return PopLocked(out);
  }

  // Blocks up to timeout for an entry; false on timeout or when `stop` becomes true.
  template <typename Rep, typename Period>
  bool WaitPop(QueueEntry* out, const std::atomic<bool>& stop, std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    ++sleepers_;
    cv_.wait_for(lock, timeout, [&] { return !heap_.empty() || stop.load(std::memory_order_relaxed); });
    --sleepers_;
    return PopLocked(out);
  }

  // Removes every entry matching pred and returns them through `removed` (control thread).
  // Only looks when nothing matches (the watchdog asks every few milliseconds).
  template <typename Pred, typename Sink>
  void RemoveIf(Pred pred, Sink removed) {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::none_of(heap_.begin(), heap_.end(), pred)) return;
    auto it = std::stable_partition(heap_.begin(), heap_.end(), [&](const QueueEntry& e) { return !pred(e); });
    for (auto j = it; j != heap_.end(); ++j) removed(*j);
    heap_.erase(it, heap_.end());
    std::make_heap(heap_.begin(), heap_.end(), less_);
    size_.store(static_cast<uint32_t>(heap_.size()), std::memory_order_release);
  }

  void WakeAll() {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }

  uint32_t size() const { return size_.load(std::memory_order_relaxed); }

  // A worker calls this when it has finished an entry it popped.
  void Done() { in_service_.fetch_sub(1, std::memory_order_release); }
  // Entries queued or popped and not yet Done(): work this bucket has taken and not finished.
  uint32_t Pending() const {
    return size_.load(std::memory_order_acquire) + in_service_.load(std::memory_order_acquire);
  }
  // Work that would run before `e` if it were pushed now: the entries taken and not finished,
  // and the queued ones more urgent than it. O(size) under the lock, no allocation (the
  // dispatcher asks only with the fallback policy on).
  uint32_t AheadOf(const QueueEntry& e) {
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t n = in_service_.load(std::memory_order_acquire);
    for (const QueueEntry& q : heap_) n += less_(e, q) ? 1 : 0;
    return n;
  }

 private:
  // std heap is a max-heap on Less: "a is less urgent than b".
  struct Less {
    bool edf;
    bool operator()(const QueueEntry& a, const QueueEntry& b) const {
      if (edf && a.due_ns != b.due_ns) return a.due_ns > b.due_ns;
      if (a.priority != b.priority && (!edf || a.due_ns == UINT64_MAX)) return a.priority < b.priority;
      return a.order > b.order;
    }
  };
  bool PopLocked(QueueEntry* out) {
    if (heap_.empty()) return false;
    std::pop_heap(heap_.begin(), heap_.end(), less_);
    *out = heap_.back();
    heap_.pop_back();
    in_service_.fetch_add(1, std::memory_order_acq_rel);  // before size_ drops: never both 0
    size_.store(static_cast<uint32_t>(heap_.size()), std::memory_order_release);
    return true;
  }

  const size_t capacity_;
  const Less less_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<QueueEntry> heap_;  // GUARDED_BY(mu_)
  int sleepers_ = 0;              // GUARDED_BY(mu_)
  std::atomic<uint32_t> size_{0};
  std::atomic<uint32_t> in_service_{0};
};

}  // namespace paam
