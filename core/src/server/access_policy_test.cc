// The access policy: parsing its flags and file (errors say what and where), which rule
// governs a peer, and paamd applying it: peers no rule lets in are refused with
// permission_denied (never a dropped connection), and each rule's caps on chain priority,
// clients, region bytes and request length.
#include "server/access_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "paam/client.h"
#include "server/server.h"
#include "server/test_socket.h"

namespace paam {
namespace {

using Kind = AccessRule::Kind;

TEST(AccessPolicyParse, FlagWithCaps) {
  auto r = ParseRuleFlag(Kind::kUser, "0:max-priority=50,max-clients=2,max-region-mib=3,max-request-ms=400");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, 0u);
  EXPECT_EQ(*r->max_priority, 50u);
  EXPECT_EQ(*r->max_clients, 2u);
  EXPECT_EQ(*r->max_region_bytes, 3ull << 20);
  EXPECT_EQ(*r->max_request_ms, 400u);
  EXPECT_NE(r->label.find("uid 0"), std::string::npos) << r->label;
  auto root = ParseRuleFlag(Kind::kUser, "root");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(root->id, 0u);
  EXPECT_FALSE(root->max_priority.has_value());
}

TEST(AccessPolicyParse, FlagErrorsSayWhatWasWrong) {
  auto unknown_user = ParseRuleFlag(Kind::kUser, "no-such-user-paam-test");
  ASSERT_FALSE(unknown_user.ok());
  EXPECT_NE(unknown_user.status().message().find("no user named 'no-such-user-paam-test'"), std::string::npos);
  auto unknown_group = ParseRuleFlag(Kind::kGroup, "no-such-group-paam-test:max-priority=1");
  ASSERT_FALSE(unknown_group.ok());
  EXPECT_NE(unknown_group.status().message().find("--allow-group"), std::string::npos);
  auto bad_key = ParseRuleFlag(Kind::kUser, "0:max-prio=1");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.status().message().find("unknown key 'max-prio'"), std::string::npos);
  auto bad_value = ParseRuleFlag(Kind::kUser, "0:max-priority=-3");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.status().message().find("KEY=N"), std::string::npos);
  auto too_big = ParseRuleFlag(Kind::kUser, "0:max-priority=4294967296");
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("at most 4294967295"), std::string::npos);
  EXPECT_FALSE(ParseRuleFlag(Kind::kUser, "0:max-request-ms=0").ok());
}

TEST(AccessPolicyParse, JsonFile) {
  auto p = ParsePolicyJson(R"({"allow": [{"user": 0, "max_priority": 9},
                                        {"group": "root", "max_clients": 4, "max_region_mib": 64}]})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->rules.size(), 2u);
  EXPECT_EQ(p->rules[0].kind, Kind::kUser);
  EXPECT_EQ(*p->rules[0].max_priority, 9u);
  EXPECT_EQ(p->rules[1].kind, Kind::kGroup);
  EXPECT_EQ(p->rules[1].id, 0u);
  EXPECT_EQ(*p->rules[1].max_region_bytes, 64ull << 20);
  EXPECT_FALSE(p->rules[1].max_request_ms.has_value());
}

TEST(AccessPolicyParse, JsonErrorsSayWhatAndWhere) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "not valid JSON"},
      {"[]", "one key, \"allow\""},
      {R"({"allow": [], "extra": 1})", "one key, \"allow\""},
      {R"({"allow": [3]})", "rule 1: must be an object"},
      {R"({"allow": [{"user": 0}, {"user": 0, "group": 0}]})", "rule 2: must name exactly one"},
      {R"({"allow": [{"max_priority": 3}]})", "rule 1: must name exactly one"},
      {R"({"allow": [{"user": 0, "max_priority": -1}]})", "\"max_priority\" must be a non-negative integer"},
      {R"({"allow": [{"user": 0, "max_priority": "5"}]})", "\"max_priority\" must be a non-negative integer"},
      {R"({"allow": [{"user": 0, "colour": 5}]})", "unknown key 'colour'"},
      {R"({"allow": [{"user": true}]})", "must be a name or an id"},
      {R"({"allow": [{"group": "no-such-group-paam-test"}]})", "no group named"},
  };
  for (const auto& [text, want] : cases) {
    auto p = ParsePolicyJson(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().code(), Errc::kInvalidArgument) << text;
    EXPECT_NE(p.status().message().find(want), std::string::npos) << text << " -> " << p.status().message();
  }
  auto missing = LoadPolicyFile("/nonexistent/paam-policy.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read policy file"), std::string::npos);
}

TEST(AccessPolicyMatch, UserRulesFirstThenOwnUidThenGroupsInOrder) {
  AccessPolicy p;
  p.rules.push_back({Kind::kGroup, 2000, "g2000", 10, {}, {}, {}});
  p.rules.push_back({Kind::kGroup, 3000, "g3000", 20, {}, {}, {}});
  p.rules.push_back({Kind::kUser, 1001, "u1001", 30, {}, {}, {}});
  const uid_t server = 500;
  EXPECT_EQ(MatchRule(p, server, {1001, 2000, {3000}}), 2);  // its user rule, before its groups
  EXPECT_EQ(MatchRule(p, server, {500, 2000, {}}), kOwnUid);  // paamd's uid, though its group has a rule
  EXPECT_EQ(MatchRule(p, server, {1002, 1002, {3000, 2000}}), 0);  // first group rule in order
  EXPECT_EQ(MatchRule(p, server, {1002, 3000, {}}), 1);           // primary group
  EXPECT_EQ(MatchRule(p, server, {1003, 1003, {4000}}), kNoRule);
  AccessPolicy own;
  own.rules.push_back({Kind::kUser, 500, "u500", 1, {}, {}, {}});
  EXPECT_EQ(MatchRule(own, server, {500, 500, {}}), 0);  // a rule naming paamd's uid applies to it
  const std::string why = RefusalMessage(p, server, {1003, 1003, {4000}});
  EXPECT_NE(why.find("does not serve uid 1003"), std::string::npos) << why;
  EXPECT_NE(why.find("g3000"), std::string::npos) << why;
}

// ---------------------------------------------------------------------------------------------
// paamd applying the policy

ServerOptions WithRule(const AccessRule& rule) {
  ServerOptions o;
  o.socket_path = test_util::TempSocket();
  o.backend.device_cpu = -2;
  o.access.rules.push_back(rule);
  return o;
}

ClientOptions Opts(const std::string& socket, uint32_t priority, uint64_t bytes = 4096) {
  ClientOptions c;
  c.socket_path = socket;
  c.name = "policy-test";
  c.priority = priority;
  c.kernels = {{"vector_add", bytes, bytes}};
  c.connect_timeout_ms = 10000;
  return c;
}

AccessRule OwnUid() {
  auto r = ParseRuleFlag(Kind::kUser, std::to_string(geteuid()));
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : AccessRule{};
}

TEST(AccessPolicyServer, PriorityAboveTheRulesCapIsRefused) {
  AccessRule rule = OwnUid();
  rule.max_priority = 10;
  auto server = Server::Start(WithRule(rule));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string& socket = (*server)->socket_path();
  auto high = Client::Connect(Opts(socket, 11));
  ASSERT_FALSE(high.ok());
  EXPECT_EQ(high.status().code(), Errc::kPermissionDenied);
  EXPECT_NE(high.status().message().find("chain priorities up to 10; asked for 11"), std::string::npos)
      << high.status().message();
  auto ok = Client::Connect(Opts(socket, 10));
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST(AccessPolicyServer, ClientsAndRegionBytesPerRuleAreCapped) {
  AccessRule rule = OwnUid();
  rule.max_clients = 2;
  rule.max_region_bytes = 4ull << 20;
  auto server = Server::Start(WithRule(rule));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string& socket = (*server)->socket_path();
  auto big = Client::Connect(Opts(socket, 1, 3ull << 20));  // 6 MiB of areas
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Errc::kResourceExhausted);
  EXPECT_NE(big.status().message().find("may map 4 MiB of regions"), std::string::npos) << big.status().message();
  auto a = Client::Connect(Opts(socket, 1));
  auto b = Client::Connect(Opts(socket, 2));
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = Client::Connect(Opts(socket, 3));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kResourceExhausted);
  EXPECT_NE(c.status().message().find("has its 2 clients registered already"), std::string::npos)
      << c.status().message();
  a->reset();  // one leaves: its place (and its bytes) are given back
  Status last;
  for (int i = 0; i < 200; ++i) {  // the server notices the departure on its control thread
    auto d = Client::Connect(Opts(socket, 3));
    if (d.ok()) return;
    last = d.status();
    usleep(20'000);
  }
  FAIL() << "a client's place was not given back: " << last.ToString();
}

// A peer of another uid (the test forks and drops to `nobody`, so it needs root): refused with
// permission_denied while no rule lets it in, served once --allow-user names it.
TEST(AccessPolicyServer, OtherUidsAreRefusedUnlessARuleLetsThemIn) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another uid";
  const uid_t nobody = 65534;
  char dir_template[] = "/tmp/paam-policy-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  ASSERT_EQ(chmod(dir.c_str(), 0711), 0);  // others may reach the socket, not list or write
  auto attempt = [&](const std::string& socket) -> int {  // the child's Errc, or 100+ on a test error
    const pid_t pid = fork();
    if (pid == 0) {
      if (setresgid(nobody, nobody, nobody) != 0 || setresuid(nobody, nobody, nobody) != 0) _exit(101);
      ClientOptions c = Opts(socket, 1);
      c.trusted_server_uids = {0};
      auto client = Client::Connect(c);
      if (client.ok()) _exit(0);
      const bool says = client.status().message().find("does not serve uid 65534") != std::string::npos;
      _exit(client.status().code() == Errc::kPermissionDenied && !says ? 102 : static_cast<int>(client.status().code()));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 103;
  };
  ServerOptions o;
  o.backend.device_cpu = -2;
  o.socket_mode = 0666;
  o.socket_path = dir + "/closed.sock";
  {
    auto server = Server::Start(o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    EXPECT_EQ(attempt(o.socket_path), static_cast<int>(Errc::kPermissionDenied));
    EXPECT_EQ((*server)->Stats().registrations, 0u);
  }
  o.socket_path = dir + "/open.sock";
  auto rule = ParseRuleFlag(Kind::kUser, std::to_string(nobody));
  ASSERT_TRUE(rule.ok());
  o.access.rules.push_back(*rule);
  {
    auto server = Server::Start(o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    EXPECT_EQ(attempt(o.socket_path), 0);
  }
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace paam
