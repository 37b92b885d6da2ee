// server/access_control.cc — the access policy applied (control thread): who may talk to
// paamd at all, and the caps of each rule on priorities, clients, region bytes and request
// length (access_policy.h; docs/security.md).
#include <unistd.h>

#include <string>

#include "server/server_impl.h"

namespace paam {
namespace {

PeerIdentity IdentityOf(const Session& s) { return {s.peer.uid, s.peer.gid, s.peer_groups}; }

std::string Mib(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

}  // namespace

Status Server::Impl::CheckPeer(const Session& s) const {
  const PeerIdentity peer = IdentityOf(s);
  if (MatchRule(options_.access, geteuid(), peer) != kNoRule) return Status::Ok();
  return Status(Errc::kPermissionDenied, RefusalMessage(options_.access, geteuid(), peer));
}

Status Server::Impl::ChargeRule(Session* s, uint32_t priority, uint64_t region_bytes) {
  const PeerIdentity peer = IdentityOf(*s);
  const int rule = MatchRule(options_.access, geteuid(), peer);
  if (rule == kNoRule) return Status(Errc::kPermissionDenied, RefusalMessage(options_.access, geteuid(), peer));
  uint64_t limit_ms = options_.max_request_ms;
  if (rule >= 0) {
    const AccessRule& r = options_.access.rules[static_cast<size_t>(rule)];
    const auto i = static_cast<size_t>(rule);
    const std::string who = DescribePeer(peer) + " (rule: " + r.label + ")";
    if (r.max_priority && priority > *r.max_priority) {
      return Status(Errc::kPermissionDenied, who + " may register chain priorities up to " +
                                                 std::to_string(*r.max_priority) + "; asked for " +
                                                 std::to_string(priority));
    }
    if (r.max_clients && rule_clients_[i] >= *r.max_clients) {
      return Status(Errc::kResourceExhausted, who + " has its " + std::to_string(*r.max_clients) +
                                                  " clients registered already; one must leave first");
    }
    if (r.max_region_bytes && rule_bytes_[i] + region_bytes > *r.max_region_bytes) {
      return Status(Errc::kResourceExhausted, who + " may map " + Mib(*r.max_region_bytes) +
                                                  " of regions; " + Mib(rule_bytes_[i]) + " are mapped and this "
                                                  "registration needs " + Mib(region_bytes) + " more");
    }
    if (r.max_request_ms && *r.max_request_ms < limit_ms) limit_ms = *r.max_request_ms;
    rule_clients_[i] += 1;
    rule_bytes_[i] += region_bytes;
  }
  s->rule = rule;
  s->region_bytes = region_bytes;
  s->request_limit_ns = limit_ms * 1'000'000;
  return Status::Ok();
}

void Server::Impl::UnchargeRule(const Session& s) {
  if (s.rule < 0) return;
  const auto i = static_cast<size_t>(s.rule);
  rule_clients_[i] -= 1;
  rule_bytes_[i] -= s.region_bytes;
}

}  // namespace paam
