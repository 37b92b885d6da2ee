#include "client/control_client.h"

#include <nlohmann/json.hpp>

#include "protocol/socket_identity.h"
#include "protocol/unix_socket.h"

namespace paam {

Result<std::unique_ptr<ControlClient>> ControlClient::Connect(const std::string& socket_path, int timeout_ms,
                                                              const std::vector<uint32_t>& trusted_server_uids) {
  const std::string path = socket_path.empty() ? DefaultSocketPath() : socket_path;
  auto fd = ConnectUnix(path);
  if (!fd.ok()) return fd.status();
  // Another local user's server must not learn what this tool asks, nor answer it.
  Status trusted = CheckServerIdentity(fd->get(), path, trusted_server_uids);
  if (!trusted.ok()) return trusted;
  return std::unique_ptr<ControlClient>(new ControlClient(std::move(fd.value()), timeout_ms));
}

Result<wire::ControlReply> ControlClient::Ask(const wire::ControlRequest& request) {
  if (!fd_.valid()) return Status(Errc::kClosed, "the connection to paamd was closed after an error");
  if (!SendMessage(fd_.get(), wire::Encode(request)).ok()) {
    fd_.reset();
    return Status(Errc::kServerDied, "paamd closed the connection");
  }
  std::vector<uint8_t> bytes;
  std::vector<UniqueFd> fds;  // none expected; closed
  Status st = RecvMessage(fd_.get(), &bytes, &fds, timeout_ms_);
  if (!st.ok()) {
    fd_.reset();  // a late reply would answer the next request
    if (st.code() == Errc::kClosed) return Status(Errc::kServerDied, "paamd closed the connection");
    return st;
  }
  auto kind = wire::PeekKind(bytes.data(), bytes.size());
  if (kind == wire::MessageKind::kRegisterReply) {
    // The door's answer to a connection it closes (a server too busy to keep it, say).
    auto r = wire::DecodeRegisterReply(bytes.data(), bytes.size());
    fd_.reset();
    if (r.ok() && r->status != Errc::kOk) return Status(r->status, r->message);
    return Status(Errc::kProtocolError, "paamd answered a control request with a registration reply");
  }
  auto reply = wire::DecodeControlReply(bytes.data(), bytes.size());
  if (!reply.ok()) {
    fd_.reset();
    return reply.status();
  }
  if (reply->status != Errc::kOk) return Status(reply->status, reply->message);
  return reply;
}

Result<std::string> ControlClient::Stats() {
  wire::ControlRequest req;
  req.kind = wire::MessageKind::kStats;
  std::string text;
  for (;;) {
    req.offset = text.size();
    auto reply = Ask(req);
    if (!reply.ok()) return reply.status();
    if (reply->offset != text.size() || reply->total < text.size() + reply->payload.size() ||
        (reply->payload.empty() && text.size() < reply->total)) {
      return Status(Errc::kProtocolError, "paamd sent a statistics chunk out of order");
    }
    text += reply->payload;
    if (text.size() == reply->total) return text;
  }
}

Result<uint64_t> ControlClient::TraceStart(uint32_t capacity) {
  wire::ControlRequest req;
  req.kind = wire::MessageKind::kTraceStart;
  req.capacity = capacity;
  auto reply = Ask(req);
  if (!reply.ok()) return reply.status();
  auto j = nlohmann::json::parse(reply->payload, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("capacity") || !j["capacity"].is_number_unsigned()) {
    return Status(Errc::kProtocolError, "paamd's answer to a trace start does not parse");
  }
  return j["capacity"].get<uint64_t>();
}

Result<std::vector<std::string>> ControlClient::TraceRead() {
  wire::ControlRequest req;
  req.kind = wire::MessageKind::kTraceRead;
  std::vector<std::string> chunks;
  uint64_t expected = 0, received = 0;
  for (;;) {
    auto reply = Ask(req);
    if (!reply.ok()) return reply.status();
    if (chunks.empty()) expected = reply->total;
    auto j = nlohmann::json::parse(reply->payload, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("records") || !j["records"].is_array()) {
      return Status(Errc::kProtocolError, "paamd's trace chunk does not parse");
    }
    const size_t n = j["records"].size();
    received += n;
    chunks.push_back(std::move(reply->payload));
    if (!reply->more || received >= expected || n == 0) return chunks;
  }
}

Result<uint64_t> ControlClient::TraceStop() {
  wire::ControlRequest req;
  req.kind = wire::MessageKind::kTraceStop;
  auto reply = Ask(req);
  if (!reply.ok()) return reply.status();
  auto j = nlohmann::json::parse(reply->payload, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("dropped") || !j["dropped"].is_number_unsigned()) {
    return Status(Errc::kProtocolError, "paamd's answer to a trace stop does not parse");
  }
  return j["dropped"].get<uint64_t>();
}

}  // namespace paam
