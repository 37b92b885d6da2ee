// protocol/unix_socket.h — the registration socket: SOCK_SEQPACKET Unix sockets that carry
// whole messages with file descriptors (SCM_RIGHTS) and tell the server who the peer is
// (SO_PEERCRED: the executor's PID comes from the kernel, never from the message).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "paam/status.h"

namespace paam {

// Default socket path: $PAAM_SOCKET, else $XDG_RUNTIME_DIR/paam/paamd.sock, else
// /tmp/paam-<uid>/paamd.sock.
std::string DefaultSocketPath();

// Binds and listens. Creates the socket's directory where missing and refuses one that is
// not private to this uid (PrepareSocketDir in socket_identity.h). Removes a stale socket file
// (nobody accepting); refuses if another server is alive on the path. The socket gets `mode`
// (CheckSocketMode) before it listens, so no connection comes in under a wider one.
Result<UniqueFd> ListenUnix(const std::string& path, uint32_t mode = 0600);
// Connects; kServerNotRunning with an actionable message when nobody listens.
Result<UniqueFd> ConnectUnix(const std::string& path);

// Sends one message with optional descriptors.
Status SendMessage(int fd, const std::vector<uint8_t>& bytes, const std::vector<int>& fds = {});
// Receives one message (blocking up to timeout_ms; -1 forever). Received descriptors are
// appended to *fds (the caller owns them). An orderly hang-up returns kClosed.
Status RecvMessage(int fd, std::vector<uint8_t>* bytes, std::vector<UniqueFd>* fds, int timeout_ms);

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};
Result<PeerCredentials> GetPeerCredentials(int fd);

// True when the peer has hung up (POLLHUP/POLLRDHUP), without blocking.
bool PeerHungUp(int fd);

}  // namespace paam
