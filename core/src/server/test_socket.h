// test_socket.h — for the server's tests: a socket path in a private directory of the test
// process (paamd refuses one straight in /tmp, which others can write).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace paam::test_util {

// "/tmp/paam-test-XXXXXX/N.sock", a new N each call; the directory is removed when the process
// that made it ends (not by forked children).
inline std::string TempSocket() {
  static int counter = 0;
  static const struct Dir {
    std::string path;
    pid_t owner = getpid();
    Dir() {
      char t[] = "/tmp/paam-test-XXXXXX";
      path = mkdtemp(t) != nullptr ? t : "/tmp/paam-test-" + std::to_string(owner);
    }
    ~Dir() {
      std::error_code ignored;
      if (getpid() == owner) std::filesystem::remove_all(path, ignored);
    }
  } dir;
  return dir.path + "/" + std::to_string(counter++) + ".sock";
}

}  // namespace paam::test_util
