// server/access_policy.cc — parsing and matching of the access policy (access_policy.h).
#include "server/access_policy.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/printable.h"

namespace paam {
namespace {

constexpr uint64_t kMaxRegionMib = uint64_t{1} << 30;      // 1 PiB: beyond any machine
constexpr uint64_t kMaxRequestMs = uint64_t{7} * 86'400'000;  // a week

std::string UserName(uid_t uid) {
  struct passwd pw {};
  struct passwd* out = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof(buf), &out) == 0 && out != nullptr) return out->pw_name;
  return {};
}

std::string GroupName(gid_t gid) {
  struct group gr {};
  struct group* out = nullptr;
  char buf[4096];
  if (getgrgid_r(gid, &gr, buf, sizeof(buf), &out) == 0 && out != nullptr) return out->gr_name;
  return {};
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 10 && s.find_first_not_of("0123456789") == std::string::npos;
}

// A user or group given by name or number; `what` is "user" or "group".
Result<uint32_t> ResolveId(AccessRule::Kind kind, const std::string& name) {
  const bool user = kind == AccessRule::Kind::kUser;
  const char* what = user ? "user" : "group";
  if (AllDigits(name)) {
    const unsigned long long v = std::stoull(name);
    if (v >= std::numeric_limits<uint32_t>::max()) {
      return Status(Errc::kInvalidArgument, std::string(what) + " id " + name + " is out of range");
    }
    return static_cast<uint32_t>(v);
  }
  if (user) {
    struct passwd pw {};
    struct passwd* out = nullptr;
    char buf[1024];
    if (getpwnam_r(name.c_str(), &pw, buf, sizeof(buf), &out) == 0 && out != nullptr) return out->pw_uid;
  } else {
    struct group gr {};
    struct group* out = nullptr;
    char buf[4096];
    if (getgrnam_r(name.c_str(), &gr, buf, sizeof(buf), &out) == 0 && out != nullptr) return out->gr_gid;
  }
  return Status(Errc::kInvalidArgument, std::string("no ") + what + " named '" + Printable(name) + "' on this machine");
}

std::string Label(AccessRule::Kind kind, uint32_t id) {
  const bool user = kind == AccessRule::Kind::kUser;
  const std::string name = user ? UserName(id) : GroupName(id);
  std::string s = std::string(user ? "user " : "group ") + (name.empty() ? std::to_string(id) : name);
  s += std::string(user ? " (uid " : " (gid ") + std::to_string(id) + ")";
  return s;
}

// Sets one cap of `rule` from key=value; `where` prefixes errors.
Status SetCap(AccessRule* rule, const std::string& key, uint64_t v, const std::string& where) {
  auto range = [&](uint64_t hi) -> Status {
    if (v > hi) return Status(Errc::kInvalidArgument, where + key + " must be at most " + std::to_string(hi));
    return Status::Ok();
  };
  if (key == "max_priority" || key == "max-priority") {
    if (Status st = range(std::numeric_limits<uint32_t>::max()); !st.ok()) return st;
    rule->max_priority = static_cast<uint32_t>(v);
  } else if (key == "max_clients" || key == "max-clients") {
    if (Status st = range(1u << 20); !st.ok()) return st;
    rule->max_clients = static_cast<uint32_t>(v);
  } else if (key == "max_region_mib" || key == "max-region-mib") {
    if (Status st = range(kMaxRegionMib); !st.ok()) return st;
    rule->max_region_bytes = v << 20;
  } else if (key == "max_request_ms" || key == "max-request-ms") {
    if (Status st = range(kMaxRequestMs); !st.ok()) return st;
    if (v == 0) return Status(Errc::kInvalidArgument, where + key + " must be at least 1");
    rule->max_request_ms = v;
  } else {
    return Status(Errc::kInvalidArgument, where + "unknown key '" + Printable(key) +
                                              "' (known: max_priority, max_clients, max_region_mib, max_request_ms)");
  }
  return Status::Ok();
}

}  // namespace

std::vector<gid_t> PeerGroups(int fd) {
  std::vector<gid_t> groups(64);
  socklen_t len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0) {
    if (errno != ERANGE) return {};
    groups.resize(len / sizeof(gid_t) + 1);
    len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0) return {};
  }
  groups.resize(len / sizeof(gid_t));
  return groups;
}

int MatchRule(const AccessPolicy& policy, uid_t server_uid, const PeerIdentity& peer) {
  for (size_t i = 0; i < policy.rules.size(); ++i) {
    const AccessRule& r = policy.rules[i];
    if (r.kind == AccessRule::Kind::kUser && r.id == peer.uid) return static_cast<int>(i);
  }
  if (peer.uid == server_uid) return kOwnUid;
  for (size_t i = 0; i < policy.rules.size(); ++i) {
    const AccessRule& r = policy.rules[i];
    if (r.kind != AccessRule::Kind::kGroup) continue;
    if (r.id == peer.gid || std::find(peer.groups.begin(), peer.groups.end(), r.id) != peer.groups.end()) {
      return static_cast<int>(i);
    }
  }
  return kNoRule;
}

std::string DescribePeer(const PeerIdentity& peer) {
  std::string s = "uid " + std::to_string(peer.uid);
  if (std::string n = UserName(peer.uid); !n.empty()) s += " (" + Printable(n) + ")";
  std::vector<gid_t> gids = {peer.gid};
  for (gid_t g : peer.groups) {
    if (std::find(gids.begin(), gids.end(), g) == gids.end()) gids.push_back(g);
  }
  s += gids.size() == 1 ? ", group " : ", groups ";
  for (size_t i = 0; i < gids.size() && i < 16; ++i) {
    s += (i ? ", " : "") + std::to_string(gids[i]);
    if (std::string n = GroupName(gids[i]); !n.empty()) s += " (" + Printable(n) + ")";
  }
  if (gids.size() > 16) s += ", ...";
  return s;
}

std::string RefusalMessage(const AccessPolicy& policy, uid_t server_uid, const PeerIdentity& peer) {
  std::string allowed = Label(AccessRule::Kind::kUser, server_uid);
  for (const AccessRule& r : policy.rules) allowed += ", " + r.label;
  return "this paamd does not serve " + DescribePeer(peer) + "; its access policy allows " + allowed +
         " (paamd --allow-user, --allow-group or --policy; docs/security.md)";
}

Result<AccessRule> ParseRuleFlag(AccessRule::Kind kind, const std::string& text) {
  const char* flag = kind == AccessRule::Kind::kUser ? "--allow-user" : "--allow-group";
  const size_t colon = text.find(':');
  AccessRule rule;
  rule.kind = kind;
  auto id = ResolveId(kind, text.substr(0, colon));
  if (!id.ok()) return Status(Errc::kInvalidArgument, std::string(flag) + ": " + id.status().message());
  rule.id = *id;
  rule.label = Label(kind, rule.id);
  if (colon == std::string::npos) return rule;
  std::stringstream caps(text.substr(colon + 1));
  std::string item;
  const std::string where = std::string(flag) + " " + Printable(text) + ": ";
  while (std::getline(caps, item, ',')) {
    const size_t eq = item.find('=');
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == std::string::npos || !AllDigits(value)) {
      return Status(Errc::kInvalidArgument, where + "each cap is KEY=N with N a non-negative integer, got '" +
                                                Printable(item) + "'");
    }
    if (Status st = SetCap(&rule, item.substr(0, eq), std::stoull(value), where); !st.ok()) return st;
  }
  return rule;
}

Result<AccessPolicy> ParsePolicyJson(const std::string& text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Status(Errc::kInvalidArgument, std::string("policy is not valid JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("allow") || !doc["allow"].is_array() || doc.size() != 1) {
    return Status(Errc::kInvalidArgument,
                  "policy must be an object with one key, \"allow\": a list of rules, e.g. "
                  "{\"allow\": [{\"group\": \"robots\", \"max_priority\": 50}]}");
  }
  AccessPolicy policy;
  const auto& allow = doc["allow"];
  if (allow.size() > 1024) return Status(Errc::kInvalidArgument, "policy has more than 1024 rules");
  for (size_t i = 0; i < allow.size(); ++i) {
    const auto& r = allow[i];
    const std::string where = "policy rule " + std::to_string(i + 1) + ": ";
    if (!r.is_object()) return Status(Errc::kInvalidArgument, where + "must be an object");
    const bool user = r.contains("user"), group = r.contains("group");
    if (user == group) {
      return Status(Errc::kInvalidArgument, where + "must name exactly one of \"user\" and \"group\"");
    }
    AccessRule rule;
    rule.kind = user ? AccessRule::Kind::kUser : AccessRule::Kind::kGroup;
    const auto& who = r[user ? "user" : "group"];
    std::string name;
    if (who.is_string()) {
      name = who.get<std::string>();
    } else if (who.is_number_unsigned()) {
      name = std::to_string(who.get<uint64_t>());
    } else {
      return Status(Errc::kInvalidArgument, where + (user ? "\"user\"" : "\"group\"") + " must be a name or an id");
    }
    auto id = ResolveId(rule.kind, name);
    if (!id.ok()) return Status(Errc::kInvalidArgument, where + id.status().message());
    rule.id = *id;
    rule.label = Label(rule.kind, rule.id);
    for (const auto& [key, value] : r.items()) {
      if (key == "user" || key == "group") continue;
      if (!value.is_number_unsigned()) {
        return Status(Errc::kInvalidArgument, where + "\"" + Printable(key) + "\" must be a non-negative integer");
      }
      if (Status st = SetCap(&rule, key, value.get<uint64_t>(), where); !st.ok()) return st;
    }
    policy.rules.push_back(std::move(rule));
  }
  return policy;
}

Result<AccessPolicy> LoadPolicyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(Errc::kInvalidArgument, "cannot read policy file " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[4096];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > (1u << 20)) return Status(Errc::kInvalidArgument, "policy file " + path + " is over 1 MiB");
  }
  auto p = ParsePolicyJson(text);
  if (!p.ok()) return Status(p.status().code(), path + ": " + p.status().message());
  return p;
}

}  // namespace paam
