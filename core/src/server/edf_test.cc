// --queue edf: the bucket queue's order (by absolute deadline, FIFO among equals, requests
// without a deadline last in chain-priority order), the absolute deadline a request gets
// (RequestDue's clamp), and paamd serving a bucket by deadline end to end; the analysis is
// refused with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "paam/client.h"
#include "server/bucket_queue.h"
#include "server/descriptor_check.h"
#include "server/server.h"
#include "server/test_socket.h"

namespace paam {
namespace {

QueueEntry Entry(uint64_t order, uint32_t priority, uint64_t due) {
  QueueEntry e;
  e.order = order;
  e.priority = priority;
  e.due_ns = due;
  return e;
}

std::vector<uint64_t> Drain(BucketQueue& q) {
  std::vector<uint64_t> orders;
  QueueEntry e;
  while (q.TryPop(&e)) {
    orders.push_back(e.order);
    q.Done();
  }
  return orders;
}

constexpr uint64_t kNone = UINT64_MAX;

TEST(EdfQueue, RunsByDeadlineFifoAmongEqualsThenTheRestByPriority) {
  BucketQueue q(16, QueueOrder::kEdf);
  // (order, priority, due)
  ASSERT_TRUE(q.TryPush(Entry(0, 9, 300)));
  ASSERT_TRUE(q.TryPush(Entry(1, 1, 100)));
  ASSERT_TRUE(q.TryPush(Entry(2, 5, kNone)));
  ASSERT_TRUE(q.TryPush(Entry(3, 7, 200)));
  ASSERT_TRUE(q.TryPush(Entry(4, 8, kNone)));
  ASSERT_TRUE(q.TryPush(Entry(5, 2, 100)));   // same deadline as 1, later: after it
  ASSERT_TRUE(q.TryPush(Entry(6, 5, kNone)));  // same priority as 2, later: after it
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{1, 5, 3, 0, 4, 2, 6}));
}

TEST(EdfQueue, FifoOrderIgnoresDeadlines) {
  BucketQueue q(16, QueueOrder::kPriority);
  ASSERT_TRUE(q.TryPush(Entry(0, 1, 100)));
  ASSERT_TRUE(q.TryPush(Entry(1, 9, 900)));
  ASSERT_TRUE(q.TryPush(Entry(2, 9, 50)));
  ASSERT_TRUE(q.TryPush(Entry(3, 5, kNone)));
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{1, 2, 3, 0}));
}

TEST(EdfQueue, AheadOfCountsTheMoreUrgentAndThoseInService) {
  BucketQueue q(16, QueueOrder::kEdf);
  ASSERT_TRUE(q.TryPush(Entry(0, 1, 100)));
  ASSERT_TRUE(q.TryPush(Entry(1, 1, 500)));
  ASSERT_TRUE(q.TryPush(Entry(2, 1, 900)));
  EXPECT_EQ(q.AheadOf(Entry(3, 1, 600)), 2u);
  EXPECT_EQ(q.AheadOf(Entry(3, 1, 500)), 2u);  // FIFO: the queued one of equal deadline is ahead
  EXPECT_EQ(q.AheadOf(Entry(3, 1, 50)), 0u);
  QueueEntry taken;
  ASSERT_TRUE(q.TryPop(&taken));               // in service now, so ahead of anything
  EXPECT_EQ(q.AheadOf(Entry(3, 1, 50)), 1u);
  q.Done();
  EXPECT_EQ(q.AheadOf(Entry(3, 1, 50)), 0u);
  EXPECT_EQ(q.AheadOf(Entry(3, 1, kNone)), 2u);
}

TEST(EdfQueue, RemovalKeepsTheOrder) {
  BucketQueue q(16, QueueOrder::kEdf);
  for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(q.TryPush(Entry(i, 1, 1000 - i * 100)));
  std::vector<uint64_t> removed;
  q.RemoveIf([](const QueueEntry& e) { return e.order % 2 == 0; },
             [&removed](const QueueEntry& e) { removed.push_back(e.order); });
  EXPECT_EQ(removed.size(), 4u);
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{7, 5, 3, 1}));
}

shm::RequestDescriptor Desc(uint64_t submit, uint64_t release) {
  shm::RequestDescriptor d{};
  d.submit_ns = submit;
  d.release_ns = release;
  return d;
}

TEST(RequestDue, ReleasePlusRelativeDeadlineClampedToTheDequeueAndOneDeadlineAfter) {
  const uint64_t now = 10'000, rel = 1'000;
  EXPECT_EQ(RequestDue(Desc(9'500, 0), now, 0), kNone);            // no relative deadline
  EXPECT_EQ(RequestDue(Desc(9'500, 0), now, rel), 10'500u);        // release = submission
  EXPECT_EQ(RequestDue(Desc(9'500, 9'200), now, rel), 10'200u);    // the job's release
  EXPECT_EQ(RequestDue(Desc(9'500, 2'000), now, rel), now);        // long released: due now, no earlier
  EXPECT_EQ(RequestDue(Desc(9'500, 50'000), now, rel), now + rel); // dated in the future
  EXPECT_EQ(RequestDue(Desc(90'000, 0), now, rel), now + rel);
  EXPECT_EQ(RequestDue(Desc(0, 0), 500, rel), 1'000u);             // near the clock's start
  EXPECT_EQ(RequestDue(Desc(UINT64_MAX, 0), UINT64_MAX - 10, rel), UINT64_MAX - 1);  // saturates, still a deadline
}

// --- paamd end to end (CPU backend) ---

std::unique_ptr<Server> StartServer(const std::string& queue) {
  ServerOptions o;
  o.socket_path = test_util::TempSocket();
  o.backend.device_cpu = -2;  // do not pin: tests run on small CI machines
  o.queue = queue;
  auto s = Server::Start(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s.value()) : nullptr;
}

std::unique_ptr<Client> Connect(const Server& server, uint32_t priority, double deadline_ms) {
  ClientOptions o;
  o.socket_path = server.socket_path();
  o.priority = priority;
  o.kernels = {{"spin", 0, 8}};
  o.deadline_ms = deadline_ms;
  auto c = Client::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c.value()) : nullptr;
}

// Runs one request per client while a blocker holds the bucket's only worker, each submitted
// a little after the one before (with `releases[i]` ns before its submission as its release,
// 0: none), and returns the indices in the order their kernels started. Repeats with a
// longer blocker until every request was queued while the blocker ran (a busy machine may
// delay a submission past it); empty if none did.
std::vector<size_t> StartOrder(Client& blocker, std::vector<std::unique_ptr<Client>>& clients,
                               const std::vector<uint64_t>& releases_before = {}) {
  for (uint64_t block_ns = 300'000'000; block_ns <= 2'400'000'000; block_ns *= 2) {
    const uint64_t block[4] = {block_ns, 0, 0, 0};
    EXPECT_TRUE(blocker.Submit(0, 0, block).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const uint64_t tiny[4] = {100'000, 0, 0, 0};
    for (size_t i = 0; i < clients.size(); ++i) {
      const uint64_t before = i < releases_before.size() ? releases_before[i] : 0;
      clients[i]->SetRelease(before == 0 ? 0 : NowNs() - before);
      EXPECT_TRUE(clients[i]->Submit(0, 0, tiny).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(3));  // distinct arrival order
    }
    EXPECT_TRUE(blocker.Wait(0, nullptr).ok());
    const RequestTimestamps b = blocker.Timestamps(0);
    bool all_queued = true;
    std::vector<std::pair<uint64_t, size_t>> starts;
    for (size_t i = 0; i < clients.size(); ++i) {
      EXPECT_TRUE(clients[i]->Wait(0, nullptr).ok());
      const RequestTimestamps t = clients[i]->Timestamps(0);
      all_queued &= b.device_start < t.dequeued && t.dequeued < b.device_end;
      starts.push_back({t.device_start, i});
    }
    if (!all_queued) continue;
    std::sort(starts.begin(), starts.end());
    std::vector<size_t> order;
    for (auto& s : starts) order.push_back(s.second);
    return order;
  }
  ADD_FAILURE() << "no round queued every request while the blocker ran";
  return {};
}

// Priorities and relative deadlines (ms; 0: none) of the clients, one bucket.
const std::vector<std::pair<uint32_t, double>> kClients = {{9, 400}, {1, 50}, {5, 0}, {7, 100}, {3, 50}, {8, 0}};

TEST(EdfServer, ServesABucketByAbsoluteDeadline) {
  auto server = StartServer("edf");
  ASSERT_NE(server, nullptr);
  auto blocker = Connect(*server, 100, 0);
  std::vector<std::unique_ptr<Client>> clients;
  for (auto [p, d] : kClients) clients.push_back(Connect(*server, p, d));
  // Deadlines (submission + relative, 3 ms apart): 1 (50 ms), 4 (50 ms, later), 3, 0; then
  // those without one by priority: 5 (8), 2 (5).
  EXPECT_EQ(StartOrder(*blocker, clients), (std::vector<size_t>{1, 4, 3, 0, 5, 2}));
}

TEST(EdfServer, FifoServesTheSameClientsByPriority) {
  auto server = StartServer("fifo");
  ASSERT_NE(server, nullptr);
  auto blocker = Connect(*server, 100, 0);
  std::vector<std::unique_ptr<Client>> clients;
  for (auto [p, d] : kClients) clients.push_back(Connect(*server, p, d));
  EXPECT_EQ(StartOrder(*blocker, clients), (std::vector<size_t>{0, 5, 3, 2, 4, 1}));
}

TEST(EdfServer, TheJobsReleaseSetsTheDeadline) {
  auto server = StartServer("edf");
  ASSERT_NE(server, nullptr);
  auto blocker = Connect(*server, 100, 0);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(Connect(*server, 5, 100));
  // Same relative deadline; the last submitted belongs to the job released first (80 ms
  // before its submission), the first to one released 10 ms before it.
  EXPECT_EQ(StartOrder(*blocker, clients, {10'000'000, 0, 80'000'000}), (std::vector<size_t>{2, 0, 1}));
}

TEST(EdfServer, TheTimingModelsChainDeadlineIsTheRelativeDeadline) {
  auto server = StartServer("edf");
  ASSERT_NE(server, nullptr);
  auto blocker = Connect(*server, 100, 0);
  std::vector<std::unique_ptr<Client>> clients;
  // (period, deadline) in ms; a deadline of 0 is the period.
  for (auto [period, deadline] : std::vector<std::pair<double, double>>{{400, 300}, {200, 0}, {400, 100}}) {
    ClientOptions o;
    o.socket_path = server->socket_path();
    o.priority = 5;
    o.kernels = {{"spin", 0, 8}};
    TimingModel t;
    t.chain = "c" + std::to_string(clients.size());
    t.period_ms = period;
    t.deadline_ms = deadline;
    t.executor = "ex";
    o.timing = t;
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients.push_back(std::move(c.value()));
  }
  EXPECT_EQ(StartOrder(*blocker, clients), (std::vector<size_t>{2, 1, 0}));
}

TEST(EdfServer, AnalysisAdmissionIsRefusedWithEdf) {
  ServerOptions o;
  o.socket_path = test_util::TempSocket();
  o.backend.device_cpu = -2;
  o.queue = "edf";
  o.admission = "analysis";
  auto s = Server::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(s.status().message().find("not EDF, and gives no bound"), std::string::npos) << s.status().message();
  o.queue = "deadline";
  o.admission = "none";
  s = Server::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'fifo' or 'edf', got 'deadline'"), std::string::npos) << s.status().message();
}

TEST(EdfServer, ARegistrationWithANonsenseDeadlineIsRefused) {
  auto server = StartServer("edf");
  ASSERT_NE(server, nullptr);
  for (double bad : {-1.0, std::nan(""), 1e12}) {
    ClientOptions o;
    o.socket_path = server->socket_path();
    o.kernels = {{"spin", 0, 8}};
    o.deadline_ms = bad;
    auto c = Client::Connect(o);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(c.status().message().find("deadline_ms"), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace paam
