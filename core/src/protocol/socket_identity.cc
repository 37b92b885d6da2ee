#include "protocol/socket_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "protocol/unix_socket.h"

namespace paam {
namespace {

std::string Octal(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

}  // namespace

Status CheckSocketMode(uint32_t mode) {
  if ((mode & ~0666u) != 0 || (mode & 0600u) != 0600u) {
    return Status(Errc::kInvalidArgument, "socket mode " + Octal(mode) +
                                              ": needs read and write for the owner and no bits beyond rw for "
                                              "group and others, e.g. 0600 (only paamd's uid) or 0660 (and its group)");
  }
  return Status::Ok();
}

std::string SocketDir(const std::string& socket_path) {
  const auto slash = socket_path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return socket_path.substr(0, slash);
}

Status PrepareSocketDir(const std::string& socket_path) {
  const std::string dir = SocketDir(socket_path);
  // mkdir -p, one level at a time; a level above the final one that cannot be made shows up as
  // the final one's error.
  for (size_t i = 1; i < dir.size(); ++i) {
    if (dir[i] == '/') mkdir(dir.substr(0, i).c_str(), 0700);
  }
  if (mkdir(dir.c_str(), 0700) == 0) {
    // Made here: exactly 0700 whatever the umask. Nobody else can have replaced it in between
    // unless they can write its parent, which the checks below cover for the final level.
    if (chmod(dir.c_str(), 0700) != 0) {
      return Status(Errc::kSystemError, "chmod 0700 " + dir + ": " + std::strerror(errno));
    }
  } else if (errno != EEXIST) {
    return Status(Errc::kSystemError, "cannot create the socket directory " + dir + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    return Status(Errc::kSystemError, "socket directory " + dir + ": " + std::strerror(errno));
  }
  const uid_t euid = geteuid();
  const std::string need = "paamd needs a directory owned by its own uid " + std::to_string(euid) +
                           " that group and others cannot write; ";
  const std::string elsewhere = "choose another socket path (--socket or $PAAM_SOCKET)";
  const std::string found = "owner uid " + std::to_string(st.st_uid) + ", mode " + Octal(st.st_mode & 07777);
  if (S_ISLNK(st.st_mode)) {
    return Status(Errc::kPermissionDenied, "socket directory " + dir + " is a symbolic link; " +
                                               need + "use the real directory, or " + elsewhere);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status(Errc::kPermissionDenied,
                  "socket directory " + dir + " is not a directory (" + found + "); " + need + elsewhere);
  }
  if (st.st_uid != euid) {
    return Status(Errc::kPermissionDenied, "socket directory " + dir + " is owned by uid " +
                                               std::to_string(st.st_uid) + " (mode " + Octal(st.st_mode & 07777) +
                                               "); " + need + "remove it, or " + elsewhere);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status(Errc::kPermissionDenied, "socket directory " + dir + " has mode " + Octal(st.st_mode & 07777) +
                                               " (owner uid " + std::to_string(st.st_uid) +
                                               "): group or others can write it; " + need + "run `chmod go-w " +
                                               dir + "`, or " + elsewhere);
  }
  return Status::Ok();
}

Result<std::vector<uint32_t>> TrustedServerUidsFromEnv() {
  std::vector<uint32_t> uids;
  const char* env = std::getenv("PAAM_TRUSTED_SERVER_UIDS");
  if (env == nullptr || *env == '\0') return uids;
  const std::string v = env;
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const bool digits = !item.empty() && item.size() <= 10 && item.find_first_not_of("0123456789") == std::string::npos;
    const unsigned long long uid = digits ? std::strtoull(item.c_str(), nullptr, 10) : ~0ull;
    if (uid >= 0xFFFFFFFFull) {  // (uid_t)-1 is no uid
      return Status(Errc::kInvalidArgument,
                    "PAAM_TRUSTED_SERVER_UIDS must be numeric uids separated by commas, e.g. 1001,1002; got '" + v +
                        "'");
    }
    uids.push_back(static_cast<uint32_t>(uid));
    if (comma == std::string::npos) return uids;
    start = comma + 1;
  }
}

Status CheckServerIdentity(int fd, const std::string& path, const std::vector<uint32_t>& trusted) {
  // The variable is read (and a malformed one refused) whoever the server is, so that a typo
  // shows the first time, not only when it matters.
  auto from_env = TrustedServerUidsFromEnv();
  if (!from_env.ok()) return from_env.status();
  auto cred = GetPeerCredentials(fd);  // the server's credentials when it called listen()
  if (!cred.ok()) return cred.status();
  const uint32_t server = cred->uid;
  const uint32_t me = geteuid();
  if (server == me || server == 0) return Status::Ok();
  const auto listed = [server](const std::vector<uint32_t>& uids) {
    return std::find(uids.begin(), uids.end(), server) != uids.end();
  };
  if (listed(trusted) || listed(*from_env)) return Status::Ok();
  return Status(Errc::kPermissionDenied, "the server at " + path + " runs as uid " + std::to_string(server) +
                                             ", not as you (uid " + std::to_string(me) +
                                             ") or root; set PAAM_TRUSTED_SERVER_UIDS=" + std::to_string(server) +
                                             " to trust it");
}

}  // namespace paam
