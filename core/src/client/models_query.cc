// client/models_query.cc — asks paamd which models it serves (QueryModels, paam/tensor.h): the
// kModels control message (server/models_query.cc), answered in chunks of JSON.
#include <string>
#include <vector>

#include "paam/client.h"
#include "paam/tensor.h"
#include "protocol/socket_identity.h"
#include "protocol/unix_socket.h"
#include "protocol/wire.h"
#include "tensors/signature.h"

namespace paam {

Result<std::string> QueryModelsJson(const std::string& socket_path, int timeout_ms,
                                    const std::vector<uint32_t>& trusted_server_uids) {
  const std::string path = socket_path.empty() ? DefaultSocketPath() : socket_path;
  auto fd = ConnectUnix(path);
  if (!fd.ok()) return fd.status();
  // Another local user's server must not learn what this process asks, nor answer it.
  if (Status trusted = CheckServerIdentity(fd->get(), path, trusted_server_uids); !trusted.ok()) return trusted;
  wire::ControlRequest req;
  req.kind = wire::MessageKind::kModels;
  std::string text;
  for (;;) {
    req.offset = text.size();
    if (!SendMessage(fd->get(), wire::Encode(req)).ok()) {
      return Status(Errc::kServerDied, "paamd at " + path + " closed the connection");
    }
    std::vector<uint8_t> bytes;
    std::vector<UniqueFd> fds;  // none expected; closed
    Status st = RecvMessage(fd->get(), &bytes, &fds, timeout_ms);
    if (st.code() == Errc::kClosed) {
      return Status(Errc::kProtocolError, "paamd at " + path + " did not answer the models query (a paamd "
                                          "older than it?)");
    }
    if (!st.ok()) return st;
    if (wire::PeekKind(bytes.data(), bytes.size()) == wire::MessageKind::kRegisterReply) {
      auto r = wire::DecodeRegisterReply(bytes.data(), bytes.size());  // the door closing the connection
      if (r.ok() && r->status != Errc::kOk) return Status(r->status, r->message);
      return Status(Errc::kProtocolError, "paamd answered the models query with a registration reply");
    }
    auto reply = wire::DecodeControlReply(bytes.data(), bytes.size());
    if (!reply.ok()) return reply.status();
    if (reply->status != Errc::kOk) return Status(reply->status, reply->message);
    if (reply->kind != wire::MessageKind::kModelsReply || reply->offset != text.size() ||
        reply->total < text.size() + reply->payload.size()) {
      return Status(Errc::kProtocolError, "paamd's models reply does not continue where the last one ended");
    }
    text += reply->payload;
    if (!reply->more || reply->payload.empty()) return text;
  }
}

Result<std::vector<ModelInfo>> QueryModels(const std::string& socket_path, int timeout_ms,
                                           const std::vector<uint32_t>& trusted_server_uids) {
  auto text = QueryModelsJson(socket_path, timeout_ms, trusted_server_uids);
  if (!text.ok()) return text.status();
  return tensors::ParseModels(*text);
}

}  // namespace paam
