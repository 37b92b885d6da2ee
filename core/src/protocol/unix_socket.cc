#include "protocol/unix_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "protocol/socket_identity.h"
#include "protocol/wire.h"

namespace paam {
namespace {

Status SysError(const std::string& what) { return Status(Errc::kSystemError, what + ": " + std::strerror(errno)); }

Result<sockaddr_un> MakeAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Status(Errc::kInvalidArgument, "socket path must be 1 to " +
                                              std::to_string(sizeof(addr.sun_path) - 1) + " bytes: '" + path + "'");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace

std::string DefaultSocketPath() {
  if (const char* env = std::getenv("PAAM_SOCKET"); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/paam/paamd.sock";
  }
  return "/tmp/paam-" + std::to_string(getuid()) + "/paamd.sock";
}

Result<UniqueFd> ListenUnix(const std::string& path, uint32_t mode) {
  auto addr = MakeAddress(path);
  if (!addr.ok()) return addr.status();
  if (Status s = CheckSocketMode(mode); !s.ok()) return s;
  if (Status s = PrepareSocketDir(path); !s.ok()) return s;
  // Another live server on this path?
  {
    UniqueFd probe(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (connect(probe.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(sockaddr_un)) == 0) {
      return Status(Errc::kInvalidArgument, "another paamd is already serving " + path);
    }
  }
  unlink(path.c_str());  // stale file from a server that died
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return SysError("socket");
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(sockaddr_un)) != 0) {
    return SysError("bind " + path);
  }
  // bind made the file with 0777 less the umask; connecting needs write permission on it.
  if (chmod(path.c_str(), mode) != 0) return SysError("chmod " + path);
  if (listen(fd.get(), 128) != 0) return SysError("listen");
  return fd;
}

Result<UniqueFd> ConnectUnix(const std::string& path) {
  auto addr = MakeAddress(path);
  if (!addr.ok()) return addr.status();
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return SysError("socket");
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(sockaddr_un)) != 0) {
    if (errno == ENOENT || errno == ECONNREFUSED) {
      return Status(Errc::kServerNotRunning,
                    "no paamd is listening on " + path + " (start one with `paam serve` or `paamd`)");
    }
    return SysError("connect " + path);
  }
  return fd;
}

Status SendMessage(int fd, const std::vector<uint8_t>& bytes, const std::vector<int>& fds) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control;
  if (!fds.empty()) {
    control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EPIPE || errno == ECONNRESET) return Status(Errc::kClosed, "peer closed the connection");
    return SysError("sendmsg");
  }
  return Status::Ok();
}

Status RecvMessage(int fd, std::vector<uint8_t>* bytes, std::vector<UniqueFd>* fds, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int pr;
  do {
    pr = poll(&p, 1, timeout_ms);
  } while (pr < 0 && errno == EINTR);
  if (pr < 0) return SysError("poll");
  if (pr == 0) return Status(Errc::kTimeout, "no reply within " + std::to_string(timeout_ms) + " ms");
  bytes->resize(wire::kMaxMessageBytes);
  iovec iov{bytes->data(), bytes->size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 253)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == ECONNRESET) return Status(Errc::kClosed, "peer reset the connection");
    if (errno == EAGAIN) return Status(Errc::kTimeout, "no message");
    return SysError("recvmsg");
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int received;
        std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (fds != nullptr) {
          fds->emplace_back(received);
        } else {
          close(received);
        }
      }
    }
  }
  if (n == 0) return Status(Errc::kClosed, "peer closed the connection");
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return Status(Errc::kProtocolError, "message too large");
  bytes->resize(static_cast<size_t>(n));
  return Status::Ok();
}

Result<PeerCredentials> GetPeerCredentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return SysError("SO_PEERCRED");
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

bool PeerHungUp(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace paam
