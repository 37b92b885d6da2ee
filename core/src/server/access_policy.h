// server/access_policy.h — who may use paamd, and how much (docs/security.md).
//
// A policy is a list of rules, each naming one uid or one gid, with optional caps. A peer
// (the uid and groups the kernel reports for the connected socket: SO_PEERCRED and
// SO_PEERGROUPS) is governed by the first rule naming its uid, else by the first rule (in
// the order given) naming its primary or one of its supplementary groups; no rule: it is
// refused. paamd's own uid is always allowed, without caps of its own, unless a rule names
// that uid. The default policy is thus: paamd's uid only.
//
// Caps apply per rule: a group rule's max_clients and max_region_bytes count the clients of
// every member it governs together; max_priority and max_request_ms apply to each client.
//
// Thread safety: immutable once built; read by the control thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paam/status.h"

namespace paam {

struct AccessRule {
  enum class Kind { kUser, kGroup } kind = Kind::kUser;
  uint32_t id = 0;
  std::string label;  // "user alice (uid 1001)", "group robots (gid 2000)": for messages
  // Caps (nullopt: none beyond the server's own).
  std::optional<uint32_t> max_priority;      // highest chain priority a client may register
  std::optional<uint32_t> max_clients;       // registered clients at once, under this rule
  std::optional<uint64_t> max_region_bytes;  // bytes of region mappings, under this rule
  std::optional<uint64_t> max_request_ms;    // longest request (also caps the client's limit)
};

struct AccessPolicy {
  std::vector<AccessRule> rules;
};

// The peer as the kernel reports it for a connected Unix socket.
struct PeerIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary (SO_PEERGROUPS); may repeat gid
};

// Reads SO_PEERGROUPS (the peer's groups when it connected). Empty on kernels without it.
std::vector<gid_t> PeerGroups(int fd);

// The rule governing `peer` under `policy` for a server running as `server_uid`: an index
// into policy.rules, kOwnUid (paamd's own uid, no rule names it: no caps), or kNoRule.
inline constexpr int kOwnUid = -1;
inline constexpr int kNoRule = -2;
int MatchRule(const AccessPolicy& policy, uid_t server_uid, const PeerIdentity& peer);

// Why `peer` may not connect at all (permission_denied), naming its uid, its groups and what
// the policy allows.
std::string RefusalMessage(const AccessPolicy& policy, uid_t server_uid, const PeerIdentity& peer);

// Parses one rule from the command line: "USER[:CAPS]" (--allow-user) or "GROUP[:CAPS]"
// (--allow-group), USER/GROUP a name or a number, CAPS a comma-separated list of
// max-priority=N, max-clients=N, max-region-mib=N, max-request-ms=N.
Result<AccessRule> ParseRuleFlag(AccessRule::Kind kind, const std::string& text);

// Parses a policy file (JSON):
//   {"allow": [{"user": "alice", "max_priority": 99},
//              {"group": "robots", "max_priority": 50, "max_clients": 16,
//               "max_region_mib": 512, "max_request_ms": 1000}]}
// Unknown keys, wrong types, negative or out-of-range numbers, unknown users or groups, and a
// rule naming both or neither a user and a group are refused with what and where.
Result<AccessPolicy> ParsePolicyJson(const std::string& text);
Result<AccessPolicy> LoadPolicyFile(const std::string& path);

// "uid 1001 (bob), groups 1001 (bob), 2000 (robots)"
std::string DescribePeer(const PeerIdentity& peer);

}  // namespace paam
