// protocol/socket_identity_test.cc — paamd's socket directory must be private to its uid and
// the socket's mode is the one asked; a client refuses, before sending anything, a server that
// runs as a uid it does not trust. The cases with another uid need root (they run a listener
// as nobody) and are skipped otherwise.
#include "protocol/socket_identity.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "paam/client.h"
#include "protocol/unix_socket.h"
#include "server/server.h"

namespace paam {
namespace {

constexpr uid_t kNobody = 65534;

bool Root() { return geteuid() == 0; }

// A fresh private directory under /tmp, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char t[] = "/tmp/paam-ident-XXXXXX";
    if (mkdtemp(t) != nullptr) path_ = t;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct stat Lstat(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path << ": " << std::strerror(errno);
  return st;
}

// A listener that runs as nobody in a directory nobody owns: it accepts one connection and
// reports how many bytes the client sent before hanging up (0: none).
class ForeignServer {
 public:
  ForeignServer() {
    EXPECT_EQ(chown(dir_.path().c_str(), kNobody, kNobody), 0);
    path_ = dir_.path() + "/paamd.sock";
    int p[2];
    EXPECT_EQ(pipe(p), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(p[0]);
      Serve(p[1]);  // never returns
    }
    close(p[1]);
    report_ = p[0];
    char ready = 0;
    EXPECT_EQ(read(report_, &ready, 1), 1) << "the listener did not start";
  }
  ~ForeignServer() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    close(report_);
  }
  const std::string& path() const { return path_; }
  int BytesReceived() {
    int32_t n = -2;
    EXPECT_EQ(read(report_, &n, sizeof n), static_cast<ssize_t>(sizeof n));
    return n;
  }

 private:
  [[noreturn]] void Serve(int report) {
    if (setgroups(0, nullptr) != 0 || setresgid(kNobody, kNobody, kNobody) != 0 ||
        setresuid(kNobody, kNobody, kNobody) != 0) {
      _exit(2);
    }
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    if (bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(s, 1) != 0) _exit(3);
    if (write(report, "r", 1) != 1) _exit(4);
    pollfd pl{s, POLLIN, 0};
    if (poll(&pl, 1, 30000) != 1) _exit(5);
    int c = accept(s, nullptr, nullptr);
    pollfd pc{c, POLLIN, 0};
    if (poll(&pc, 1, 30000) != 1) _exit(6);
    char buf[65536];
    const ssize_t got = recv(c, buf, sizeof buf, 0);  // 0: the client hung up without a byte
    const int32_t n = got < 0 ? -1 : static_cast<int32_t>(got);
    _exit(write(report, &n, sizeof n) == static_cast<ssize_t>(sizeof n) ? 0 : 7);
  }

  TempDir dir_;
  std::string path_;
  pid_t pid_ = -1;
  int report_ = -1;
};

ClientOptions SpinClient(const std::string& socket_path) {
  ClientOptions o;
  o.socket_path = socket_path;
  o.kernels = {{"spin", 64, 64, std::nullopt}};
  o.connect_timeout_ms = 10000;
  return o;
}

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// ------------------------------------------------------------------------------------------
// The server's directory and socket

TEST(SocketDirectory, MissingLevelsAreMade0700AndTheSocketHasTheDefaultMode) {
  TempDir base;
  const std::string path = base.path() + "/a/b/paamd.sock";
  auto fd = ListenUnix(path);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  EXPECT_EQ(Lstat(base.path() + "/a").st_mode & 07777, 0700u);
  EXPECT_EQ(Lstat(base.path() + "/a/b").st_mode & 07777, 0700u);
  const struct stat sock = Lstat(path);
  EXPECT_TRUE(S_ISSOCK(sock.st_mode));
  EXPECT_EQ(sock.st_mode & 07777, 0600u);
}

TEST(SocketDirectory, TheFinalDirectoryIs0700WhateverTheUmask) {
  TempDir base;
  const mode_t old = umask(0);
  auto fd = ListenUnix(base.path() + "/open/paamd.sock");
  umask(old);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  EXPECT_EQ(Lstat(base.path() + "/open").st_mode & 07777, 0700u);
  EXPECT_EQ(Lstat(base.path() + "/open/paamd.sock").st_mode & 07777, 0600u);
}

TEST(SocketDirectory, TheSocketGetsTheModeAsked) {
  TempDir base;
  auto fd = ListenUnix(base.path() + "/paamd.sock", 0660);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  EXPECT_EQ(Lstat(base.path() + "/paamd.sock").st_mode & 07777, 0660u);

  ServerOptions o;
  o.socket_path = base.path() + "/server.sock";
  o.socket_mode = 0660;
  o.backend.device_cpu = -2;
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ(Lstat(o.socket_path).st_mode & 07777, 0660u);
}

TEST(SocketDirectory, AModeBeyondReadWriteOrWithoutTheOwnersIsRefused) {
  TempDir base;
  for (uint32_t mode : {0700u, 0400u, 0200u, 04600u, 01600u, 0611u}) {
    auto fd = ListenUnix(base.path() + "/paamd.sock", mode);
    ASSERT_FALSE(fd.ok()) << std::oct << mode;
    EXPECT_EQ(fd.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(fd.status().message().find("socket mode"), std::string::npos) << fd.status().message();
  }
  for (uint32_t mode : {0600u, 0660u, 0666u, 0640u, 0644u}) EXPECT_TRUE(CheckSocketMode(mode).ok()) << std::oct << mode;
}

TEST(SocketDirectory, AnExistingPrivateOrReadableDirectoryIsAccepted) {
  TempDir base;  // mkdtemp: 0700
  EXPECT_TRUE(ListenUnix(base.path() + "/paamd.sock").ok());
  const std::string shared = base.path() + "/readable";
  ASSERT_EQ(mkdir(shared.c_str(), 0755), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0755), 0);
  EXPECT_TRUE(ListenUnix(shared + "/paamd.sock").ok());
}

TEST(SocketDirectory, ADirectoryGroupOrOthersCanWriteIsRefused) {
  TempDir base;
  for (mode_t mode : {0770, 0702, 01777}) {
    const std::string dir = base.path() + "/open" + std::to_string(mode);
    ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
    ASSERT_EQ(chmod(dir.c_str(), mode), 0);
    auto fd = ListenUnix(dir + "/paamd.sock");
    ASSERT_FALSE(fd.ok()) << std::oct << mode;
    EXPECT_EQ(fd.status().code(), Errc::kPermissionDenied);
    char found[64];
    std::snprintf(found, sizeof found, "has mode %04o (owner uid %u)", static_cast<unsigned>(mode),
                  static_cast<unsigned>(geteuid()));
    const std::string& msg = fd.status().message();
    EXPECT_NE(msg.find("socket directory " + dir + " " + found + ": group or others can write it"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("paamd needs a directory owned by its own uid " + std::to_string(geteuid())), std::string::npos)
        << msg;
    EXPECT_NE(access((dir + "/paamd.sock").c_str(), F_OK), 0) << "a socket was made";
  }
}

TEST(SocketDirectory, ASymbolicLinkIsRefused) {
  TempDir base;
  const std::string real = base.path() + "/real";
  const std::string link = base.path() + "/link";
  ASSERT_EQ(mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  auto fd = ListenUnix(link + "/paamd.sock");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), Errc::kPermissionDenied);
  EXPECT_NE(fd.status().message().find("socket directory " + link + " is a symbolic link"), std::string::npos)
      << fd.status().message();
  EXPECT_NE(access((real + "/paamd.sock").c_str(), F_OK), 0) << "a socket was made through the link";
}

TEST(SocketDirectory, AFileInPlaceOfTheDirectoryIsRefused) {
  TempDir base;
  const std::string file = base.path() + "/file";
  close(open(file.c_str(), O_CREAT | O_WRONLY, 0600));
  auto fd = ListenUnix(file + "/paamd.sock");
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("is not a directory"), std::string::npos) << fd.status().message();
}

TEST(SocketDirectory, ADirectoryOfAnotherUidIsRefused) {
  if (!Root()) GTEST_SKIP() << "needs root to give a directory to another uid";
  TempDir base;
  ASSERT_EQ(chown(base.path().c_str(), kNobody, kNobody), 0);
  auto fd = ListenUnix(base.path() + "/paamd.sock");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), Errc::kPermissionDenied);
  EXPECT_EQ(fd.status().message(), "socket directory " + base.path() +
                                       " is owned by uid 65534 (mode 0700); paamd needs a directory owned by its "
                                       "own uid 0 that group and others cannot write; remove it, or choose another "
                                       "socket path (--socket or $PAAM_SOCKET)");
  EXPECT_NE(access((base.path() + "/paamd.sock").c_str(), F_OK), 0) << "a socket was made";
}

TEST(SocketDirectory, ASetgidDirectoryGivesTheSocketItsGroup) {
  // How a group is let in (docs/security.md): a directory of paamd's uid and the group, mode
  // 2750, and --socket-mode 0660.
  if (!Root()) GTEST_SKIP() << "needs root to give a directory another group";
  TempDir base;
  const std::string dir = base.path() + "/group";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(chown(dir.c_str(), 0, kNobody), 0);
  ASSERT_EQ(chmod(dir.c_str(), 02750), 0);
  auto fd = ListenUnix(dir + "/paamd.sock", 0660);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  const struct stat sock = Lstat(dir + "/paamd.sock");
  EXPECT_EQ(sock.st_gid, kNobody);
  EXPECT_EQ(sock.st_mode & 07777, 0660u);
}

// ------------------------------------------------------------------------------------------
// The client's check of the server's uid

TEST(ServerIdentity, TrustedUidsFromTheEnvironment) {
  {
    ScopedEnv env("PAAM_TRUSTED_SERVER_UIDS", nullptr);
    auto uids = TrustedServerUidsFromEnv();
    ASSERT_TRUE(uids.ok());
    EXPECT_TRUE(uids->empty());
  }
  {
    ScopedEnv env("PAAM_TRUSTED_SERVER_UIDS", "1001,0,4294967294");
    auto uids = TrustedServerUidsFromEnv();
    ASSERT_TRUE(uids.ok()) << uids.status().ToString();
    EXPECT_EQ(*uids, (std::vector<uint32_t>{1001, 0, 4294967294u}));
  }
  for (const char* bad : {"nobody", "1001,", ",1001", "1001 ,2", "-1", "4294967295", "99999999999", "1;2"}) {
    ScopedEnv env("PAAM_TRUSTED_SERVER_UIDS", bad);
    auto uids = TrustedServerUidsFromEnv();
    ASSERT_FALSE(uids.ok()) << bad;
    EXPECT_EQ(uids.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(uids.status().message().find(std::string("PAAM_TRUSTED_SERVER_UIDS must be numeric uids separated by "
                                                       "commas, e.g. 1001,1002; got '") + bad + "'"),
              std::string::npos)
        << uids.status().message();
  }
}

TEST(ServerIdentity, AClientRefusesAServerOfAnotherUidAndSendsNothing) {
  if (!Root()) GTEST_SKIP() << "needs root to run a listener as another uid";
  ScopedEnv env("PAAM_TRUSTED_SERVER_UIDS", nullptr);
  ForeignServer foreign;
  auto c = Client::Connect(SpinClient(foreign.path()));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kPermissionDenied);
  EXPECT_EQ(c.status().message(), "the server at " + foreign.path() +
                                      " runs as uid 65534, not as you (uid 0) or root; set "
                                      "PAAM_TRUSTED_SERVER_UIDS=65534 to trust it");
  EXPECT_EQ(foreign.BytesReceived(), 0);
}

TEST(ServerIdentity, AUidInTheClientOptionsIsTrusted) {
  if (!Root()) GTEST_SKIP() << "needs root to run a listener as another uid";
  ScopedEnv env("PAAM_TRUSTED_SERVER_UIDS", nullptr);
  ForeignServer foreign;
  ClientOptions o = SpinClient(foreign.path());
  o.trusted_server_uids = {1234, kNobody};
  auto c = Client::Connect(o);
  // The listener reads the registration and hangs up without answering.
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kServerDied) << c.status().ToString();
  EXPECT_GT(foreign.BytesReceived(), 0);
}

TEST(ServerIdentity, AUidInTheEnvironmentIsTrusted) {
  if (!Root()) GTEST_SKIP() << "needs root to run a listener as another uid";
  ScopedEnv env("PAAM_TRUSTED_SERVER_UIDS", "1234,65534");
  ForeignServer foreign;
  auto c = Client::Connect(SpinClient(foreign.path()));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kServerDied) << c.status().ToString();
  EXPECT_GT(foreign.BytesReceived(), 0);
}

TEST(ServerIdentity, AMalformedTrustListIsRefusedBeforeSending) {
  if (!Root()) GTEST_SKIP() << "needs root to run a listener as another uid";
  ScopedEnv env("PAAM_TRUSTED_SERVER_UIDS", "65534,nobody");
  ForeignServer foreign;
  auto c = Client::Connect(SpinClient(foreign.path()));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kInvalidArgument) << c.status().ToString();
  EXPECT_EQ(foreign.BytesReceived(), 0);
}

TEST(ServerIdentity, AServerOfTheClientsOwnUidIsTrusted) {
  TempDir base;
  ServerOptions so;
  so.socket_path = base.path() + "/paamd.sock";
  so.backend.device_cpu = -2;
  auto server = Server::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ScopedEnv env("PAAM_TRUSTED_SERVER_UIDS", nullptr);
  auto c = Client::Connect(SpinClient(so.socket_path));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
}

}  // namespace
}  // namespace paam
