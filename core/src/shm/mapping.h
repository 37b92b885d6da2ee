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

  // Maps `bytes` of `fd` read-write (or read-only, for a memfd sealed by SealFutureWrites).
  static Result<Mapping> Map(int fd, size_t bytes, bool writable = true);
  // Maps `bytes` of `fd` read-write and unlocked even where the process locks its future
  // mappings (mlockall MCL_FUTURE), which would fault in and lock all of it at once; Lock()
  // may lock it later.
  static Result<Mapping> MapUnlocked(int fd, size_t bytes);
  // Faults in and locks the whole mapping (mlock).
  Status Lock();

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
// so a client cannot truncate it under the server and make it fault). With `final_seal` the
// seals are closed (F_SEAL_SEAL); without it the creator still owes SealFutureWrites.
Result<UniqueFd> CreateMemfd(const std::string& name, size_t bytes, bool final_seal = true);
// Seals a memfd made with final_seal = false against every write from now on
// (F_SEAL_FUTURE_WRITE | F_SEAL_SEAL): mappings that exist stay writable, but nobody can map it
// writable again (nor mprotect a read-only mapping writable), write(2) it or punch holes in it.
// This is how the server keeps a page that every client can read and none can change.
Status SealFutureWrites(int fd);
// Size of the file behind fd (the client checks what the server sent).
Result<size_t> FdSize(int fd);

}  // namespace paam
