#include "shm/mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // Linux 5.1; older C libraries lack the name
#endif

namespace paam {

namespace {
Status SysError(const std::string& what) { return Status(Errc::kSystemError, what + ": " + std::strerror(errno)); }
}  // namespace

Mapping::Mapping(Mapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void Mapping::Reset() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

Result<Mapping> Mapping::Map(int fd, size_t bytes, bool writable) {
  void* p = mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return SysError("mmap");
  Mapping m;
  m.data_ = p;
  m.size_ = bytes;
  return m;
}

Result<Mapping> Mapping::MapUnlocked(int fd, size_t bytes) {
  // Under MCL_FUTURE mmap itself faults in and locks a new mapping, but a mapping without
  // access has nothing it could fault in: it is unlocked before it is opened read-write.
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return SysError("mmap");
  Mapping m;
  m.data_ = p;
  m.size_ = bytes;
  if (munlock(p, bytes) != 0) return SysError("munlock");
  if (mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) return SysError("mprotect");
  return m;
}

Status Mapping::Lock() {
  if (mlock(data_, size_) != 0) return SysError("mlock");
  return Status::Ok();
}

Result<UniqueFd> CreateMemfd(const std::string& name, size_t bytes, bool final_seal) {
  UniqueFd fd(memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return SysError("memfd_create");
  if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return SysError("ftruncate");
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | (final_seal ? F_SEAL_SEAL : 0)) != 0) {
    return SysError("memfd seal");
  }
  return fd;
}

Status SealFutureWrites(int fd) {
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
    return SysError("memfd seal F_SEAL_FUTURE_WRITE (needs Linux 5.1 or later)");
  }
  return Status::Ok();
}

Result<size_t> FdSize(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return SysError("fstat");
  return static_cast<size_t>(st.st_size);
}

}  // namespace paam
