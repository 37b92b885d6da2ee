// protocol/socket_identity.h — who may stand behind paamd's socket. Another local user must
// neither serve on a user's socket path nor swap the socket under a running paamd: paamd keeps
// its socket in a directory that only its own uid can write, and a client talks only to a
// server whose uid it trusts (its own, root, or one it was told to trust). docs/security.md
// has the threat model.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "paam/status.h"

namespace paam {

// The socket's mode when none is asked: only paamd's own uid (and root) may connect.
inline constexpr uint32_t kDefaultSocketMode = 0600;

// A socket mode paamd accepts: read and write for the owner, nothing beyond rw for group and
// others (0600, 0660, 0666, ...). kInvalidArgument otherwise.
Status CheckSocketMode(uint32_t mode);

// The directory that holds socket_path: "." for a bare name.
std::string SocketDir(const std::string& socket_path);

// Creates the socket's directory where it is missing (each missing level with mode 0700) and
// checks the final one with lstat: a real directory (a symbolic link is refused), owned by this
// process's effective uid, not writable by group or others. The levels above it may be shared
// (/tmp, $XDG_RUNTIME_DIR). kPermissionDenied names the path, the owner and mode found and what
// is needed; kSystemError when the directory cannot be created or read.
Status PrepareSocketDir(const std::string& socket_path);

// $PAAM_TRUSTED_SERVER_UIDS: uids separated by commas ("1001,1002"; unset or empty: none).
// kInvalidArgument names the variable and its value when it does not parse.
Result<std::vector<uint32_t>> TrustedServerUidsFromEnv();

// Checks, with SO_PEERCRED on the connected socket fd, that the server at `path` runs as this
// process's effective uid, as root, or as a uid in `trusted` or $PAAM_TRUSTED_SERVER_UIDS.
// Call it before sending anything. kPermissionDenied otherwise, saying how to trust the uid.
Status CheckServerIdentity(int fd, const std::string& path, const std::vector<uint32_t>& trusted);

}  // namespace paam
