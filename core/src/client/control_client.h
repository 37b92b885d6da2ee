// client/control_client.h — the tools' side of paamd's control requests: live statistics and
// the trace (server/control_requests.cc). A ControlClient is one connection that never
// registers; like a client, it checks the server's uid before sending anything
// (protocol/socket_identity.h). paam.observe (python/paam/observe.py) is built on it.
//
// Thread safety: one thread at a time per ControlClient.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "paam/status.h"
#include "protocol/wire.h"

namespace paam {

class ControlClient {
 public:
  // Connects to paamd at `socket_path` ("" : the default path). Errors: server_not_running,
  // permission_denied (a server of an untrusted uid).
  static Result<std::unique_ptr<ControlClient>> Connect(const std::string& socket_path, int timeout_ms,
                                                        const std::vector<uint32_t>& trusted_server_uids = {});

  // One statistics snapshot (JSON text), however many chunks it takes.
  Result<std::string> Stats();
  // Starts recording (about `capacity` records over all lanes; 0: paamd's default) and
  // returns the capacity paamd gave it. Restarting one's own trace drops what it holds.
  Result<uint64_t> TraceStart(uint32_t capacity);
  // Drains what was recorded: the JSON chunks paamd sent, until nothing more was waiting or
  // as many records as were waiting when it began have come (a busy server never runs dry).
  Result<std::vector<std::string>> TraceRead();
  // Stops recording; returns the records dropped because a ring was full.
  Result<uint64_t> TraceStop();

 private:
  ControlClient(UniqueFd fd, int timeout_ms) : fd_(std::move(fd)), timeout_ms_(timeout_ms) {}
  Result<wire::ControlReply> Ask(const wire::ControlRequest& request);

  UniqueFd fd_;
  int timeout_ms_;
};

}  // namespace paam
