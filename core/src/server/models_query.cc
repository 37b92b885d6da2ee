// server/models_query.cc — the models this paamd serves and their signatures (docs/models.md),
// for clients that size their regions from them and for `paam models`.
//
// Kernels of version 2 plugins may publish a tensor signature (kernel_abi.h): JSON with the
// model's format, file, device, named inputs and outputs and the region sizes they need. Init
// checks each one and joins them into {"models": [...]}, which never changes afterwards; a
// kModels request (from a tool or a client, let in by the access policy like a statistics
// request) gets the part of it from its offset, at most kMaxControlPayload bytes a reply.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/printable.h"
#include "server/server_impl.h"
#include "tensors/signature.h"

namespace paam {

Status Server::Impl::BuildModels() {
  nlohmann::json models = nlohmann::json::array();
  for (size_t id = 0; id < registry_.size(); ++id) {
    const KernelEntry* k = registry_.Get(static_cast<uint32_t>(id));
    if (k->tensor_signature.empty()) continue;
    const std::string where = "kernel '" + k->name + "' publishes a tensor signature that";
    nlohmann::json j = nlohmann::json::parse(k->tensor_signature, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return Status(Errc::kInvalidArgument, where + " is not a JSON object");
    auto sig = tensors::ParseSignature(k->tensor_signature, where + " is malformed");
    if (!sig.ok()) return sig.status();
    j["name"] = k->name;  // the registry's name is the one requests use
    models.push_back(std::move(j));
  }
  models_json_ = nlohmann::json{{"models", std::move(models)}}.dump();
  return Status::Ok();
}

void Server::Impl::HandleModels(int epfd, Session* s, const std::vector<uint8_t>& bytes) {
  const int fd = s->socket.get();
  wire::ControlReply reply;
  reply.kind = wire::MessageKind::kModelsReply;
  // Sent without blocking, as the statistics are: a peer that does not read is closed.
  auto answer = [&] {
    const std::vector<uint8_t> out = wire::Encode(reply);
    ssize_t n = 0;
    do {
      n = ::send(fd, out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(out.size());
  };
  if (Status allowed = CheckPeer(*s); !allowed.ok()) {
    Count(&refused_peers_, "refused peers the access policy does not allow (the latest: " +
                               Printable(allowed.message(), 300) + ")");
    reply.status = allowed.code();
    reply.message = allowed.message();
    (void)answer();
    Reap(epfd, fd, /*died=*/false);
    return;
  }
  auto offset = wire::DecodeModelsRequest(bytes.data(), bytes.size());
  if (!offset.ok()) {
    reply.status = offset.status().code();
    reply.message = offset.status().message();
    (void)answer();
    Reap(epfd, fd, /*died=*/false);
    return;
  }
  reply.total = models_json_.size();
  reply.offset = std::min<uint64_t>(*offset, models_json_.size());
  reply.payload = models_json_.substr(reply.offset, wire::kMaxControlPayload);
  reply.more = reply.offset + reply.payload.size() < models_json_.size();
  if (!answer()) Reap(epfd, fd, /*died=*/false);
}

}  // namespace paam
