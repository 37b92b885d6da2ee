// shm/mapping.h — anonymous shared memory (memfd) and its mapping.
#pragma once

#include <cstddef>
#include <string>

#include "common/unique_fd.h"
#include "paam/status.h"

namespace paam {

// A MAP_SHARED mapping; unmapped on destruction.
class Mapping {
 public:
  Mapping() = default;
  ~Mapping() { Reset(); }
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  // Maps `bytes` of `fd` read-write.
  static Result<Mapping> Map(int fd, size_t bytes);

  void* data() const { return data_; }
  size_t size() const { return size_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  void Reset();

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Creates a sealed-size memfd of `bytes` (MFD_CLOEXEC | MFD_ALLOW_SEALING, F_SEAL_SHRINK|GROW
// so a client cannot truncate it under the server and make it fault).
Result<UniqueFd> CreateMemfd(const std::string& name, size_t bytes);
// Size of the file behind fd (the client checks what the server sent).
Result<size_t> FdSize(int fd);

}  // namespace paam
