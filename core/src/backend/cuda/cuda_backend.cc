// backend/cuda/cuda_backend.cc — see cuda_backend.h.
#include "backend/cuda/cuda_backend.h"

#include <cuda.h>  // types of the driver's stream memory operations (resolved at run time)
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/prctl.h>
#include <time.h>

#include "backend/cuda/cuda_cancel.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_preempt.h"
#include "backend/cuda/cuda_util.h"
#include "common/clock.h"

namespace paam {
namespace {

// Errors that leave the context unusable: every later call in this process fails too, until
// the context is destroyed (CUDA's "sticky" errors). The unit is then lost (Backend::Lost).
bool Sticky(cudaError_t e) {
  constexpr cudaError_t kSticky[] = {
      cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorHardwareStackError, cudaErrorIllegalInstruction,
      cudaErrorMisalignedAddress, cudaErrorInvalidAddressSpace, cudaErrorInvalidPc, cudaErrorECCUncorrectable,
      cudaErrorAssert, cudaErrorLaunchTimeout, cudaErrorNvlinkUncorrectable, cudaErrorContextIsDestroyed};
  return std::find(std::begin(kSticky), std::end(kSticky), e) != std::end(kSticky);
}

// How a worker waits for its stream work (BackendOptions::cuda_wait, paamd --cuda-wait, or
// PAAM_CUDA_WAIT; backend.h's CudaWait says what each does). kSpin: the stream writes a sequence
// number into pinned host memory (cuStreamWriteValue32) and the worker spins on it without
// calling the driver; kNap looks at the same word between sleeps of nap_ns_.
using WaitKind = CudaWait::Kind;

using WriteValueFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using AddressRangeFn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);

// Device buffers and pinned host ranges of one region.
struct RegionState {
  int ordinal = 0;
  void* d_input = nullptr;
  void* d_output = nullptr;
  uint64_t input_capacity = 0;
  uint64_t output_capacity = 0;
  void* pinned[2] = {nullptr, nullptr};  // host ranges this backend registered (to unregister)
  void* ipc[2] = {nullptr, nullptr};     // opened CUDA IPC allocations (input, output), to close
};

class CudaBackend final : public Backend {
 public:
  CudaBackend() = default;
  ~CudaBackend() override;

  Status Init(const BackendOptions& options, const std::vector<int>& ordinals);

  std::string_view name() const override { return "cuda"; }
  int Levels() const override { return levels_; }
  int Lanes(int level) const override { return lanes_[static_cast<size_t>(level)]; }
  int Units() const override { return static_cast<int>(units_.size()); }
  int UnitOfDevice(int device) const override {
    for (size_t i = 0; i < units_.size(); ++i) {
      if (units_[i].ordinal == device) return static_cast<int>(i);
    }
    return -1;
  }

  Status PrepareWorker(int unit, int level, int lane, std::string* note) override;
  Status AttachRegion(RegionMemory* region) override;
  void DetachRegion(RegionMemory* region) override;
  Status Run(const KernelCall& call, int level, int lane, DeviceTimes* times) override;
  bool Lost(int unit) const override {
    return unit >= 0 && static_cast<size_t>(unit) < lost_.size() && lost_[static_cast<size_t>(unit)].load(std::memory_order_acquire);
  }
  std::atomic<uint64_t>* CancelWord(int unit, int level, int lane) override {
    Lane* l = LaneOf(unit, level, lane);
    return l == nullptr ? nullptr : units_[unit].cancel->Word(static_cast<size_t>(l - units_[unit].lanes.data()));
  }
  void SetQueueDepth(QueueDepth depth) override { depth_ = std::move(depth); }

 private:
  // One worker's stream and events. Used by one worker at a time (Backend contract).
  struct Lane {
    cudaStream_t stream = nullptr;
    cudaEvent_t issued = nullptr;  // sleeping waits: recorded first, the host clock's anchor
    cudaEvent_t kernel_begin = nullptr;
    cudaEvent_t kernel_end = nullptr;
    cudaEvent_t done = nullptr;
    volatile uint32_t* flag = nullptr;  // kFlag: host word the stream writes `seq` into
    CUdeviceptr flag_device = 0;
    uint32_t seq = 0;
    cudaEvent_t slice_done[2] = {nullptr, nullptr};  // gpu_preempt: a plugin kernel's slices
  };
  struct Unit {
    int ordinal = 0;
    std::string device_name;
    std::vector<Lane> lanes;  // level l, lane j at lane_offset[l] + j
    void* flags = nullptr;    // cudaHostAlloc'ed, one cache line per lane
    std::unique_ptr<CudaCancelWords> cancel;  // one per lane, same index
    std::unique_ptr<CudaPreemptWords> preempt;  // gpu_preempt: one word per level, lanes as above
  };

  Lane* LaneOf(int unit, int level, int lane) {
    if (unit < 0 || unit >= Units() || level < 0 || level >= levels_ || lane < 0 || lane >= Lanes(level)) {
      return nullptr;
    }
    return &units_[unit].lanes[lane_offset_[level] + lane];
  }
  cudaError_t Wait(Lane* lane, WaitKind wait) const;
  Status SetUpFlags(Unit* unit);
  Result<RegionState*> ImplicitState(const RegionMemory& region);
  // Opens (or shares an already opened) CUDA IPC allocation on GPU `ordinal` and checks that
  // [offset, offset + bytes) lies inside it. Returns the allocation's base. Registration only.
  Result<void*> OpenIpc(const IpcHandle& handle, int ordinal, uint64_t offset, uint64_t bytes, const char* what);
  void CloseIpc(void* base);

  // CUDA IPC allocations this process has opened, reference-counted: a handle may be opened
  // only once per process, and one allocation may back several buffers or regions.
  struct OpenedIpc {
    IpcHandle handle;
    int ordinal;
    void* base;
    int refs;
  };
  std::mutex ipc_mu_;
  std::vector<OpenedIpc> ipc_;  // GUARDED_BY(ipc_mu_)
  AddressRangeFn address_range_ = nullptr;  // cuMemGetAddressRange, resolved at Init

  // Regions that reached Run() without AttachRegion() (a caller that builds a fresh
  // RegionMemory per call, as direct mode may): attached on first use, keyed by their host
  // areas, reused afterwards and released with the backend. Linear search; few entries.
  struct Implicit {
    void* input;
    void* output;
    uint64_t input_capacity;
    uint64_t output_capacity;
    int unit;
    RegionMemory memory;  // the attached copy, owns the RegionState
  };
  std::mutex implicit_mu_;
  std::vector<std::unique_ptr<Implicit>> implicit_;  // GUARDED_BY(implicit_mu_)

  // Units whose context met a sticky error (Lost); set by Run, never cleared.
  std::array<std::atomic<bool>, 64> lost_{};
  void MarkLost(int unit) {
    if (unit >= 0 && static_cast<size_t>(unit) < lost_.size()) lost_[static_cast<size_t>(unit)].store(true, std::memory_order_release);
  }

  // Constant after Init.
  int levels_ = 1;
  static constexpr int kDefaultBestEffortLanes = 4;
  std::vector<int> lanes_;  // per level (LanesPerLevel)
  WaitKind wait_ = WaitKind::kSpin;
  int64_t nap_ns_ = 0;  // kNap: the sleep between two looks at the completion word
  int spin_levels_ = 0;  // levels below this spin where wait_ is kNap (BackendOptions::spin_levels)
  bool Flagged() const { return wait_ == WaitKind::kSpin || wait_ == WaitKind::kNap; }
  // The wait of `level`'s workers: wait_, or spin for the spin_levels_ most urgent where it naps.
  WaitKind WaitOf(int level) const {
    return wait_ == WaitKind::kNap && level < spin_levels_ ? WaitKind::kSpin : wait_;
  }
  // A sleeping wait (block, nap) sees the completion up to one wake-up late, so Run anchors the
  // device times to the host clock at the issue instead of at the completion it saw.
  static bool Sleeps(WaitKind w) { return w == WaitKind::kBlock || w == WaitKind::kNap; }
  WriteValueFn write_value_ = nullptr;
  std::vector<int> priority_;     // stream priority of each level
  std::vector<int> lane_offset_;  // first lane index of each level
  std::vector<Unit> units_;
  bool preempt_ = false;   // BackendOptions::gpu_preempt
  uint64_t slice_ns_ = 0;  // BackendOptions::gpu_slice_us
  QueueDepth depth_;       // the server's queues (SetQueueDepth; unset in direct mode)
};

CudaBackend::~CudaBackend() {
  for (auto& r : implicit_) DetachRegion(&r->memory);
  for (Unit& u : units_) {
    DeviceGuard guard(u.ordinal);
    for (Lane& l : u.lanes) {
      if (l.stream != nullptr) cudaStreamSynchronize(l.stream);
      if (l.issued != nullptr) cudaEventDestroy(l.issued);
      if (l.kernel_begin != nullptr) cudaEventDestroy(l.kernel_begin);
      if (l.kernel_end != nullptr) cudaEventDestroy(l.kernel_end);
      if (l.done != nullptr) cudaEventDestroy(l.done);
      for (cudaEvent_t ev : l.slice_done) {
        if (ev != nullptr) cudaEventDestroy(ev);
      }
      if (l.stream != nullptr) cudaStreamDestroy(l.stream);
    }
    if (u.flags != nullptr) cudaFreeHost(u.flags);
    u.cancel.reset();
    u.preempt.reset();
  }
}

constexpr size_t kFlagStride = 64;  // one cache line per lane's flag

// Allocates the lanes' completion flags and checks once that the stream can write them;
// falls back to event polling if this driver cannot.
Status CudaBackend::SetUpFlags(Unit* unit) {
  cudaError_t e = cudaHostAlloc(&unit->flags, kFlagStride * unit->lanes.size(),
                                cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) return CudaFail(Errc::kResourceExhausted, "cudaHostAlloc", e);
  std::memset(unit->flags, 0, kFlagStride * unit->lanes.size());
  for (size_t i = 0; i < unit->lanes.size(); ++i) {
    Lane& l = unit->lanes[i];
    auto* host = static_cast<char*>(unit->flags) + i * kFlagStride;
    void* dev = nullptr;
    e = cudaHostGetDevicePointer(&dev, host, 0);
    if (e != cudaSuccess) return CudaFail(Errc::kResourceExhausted, "cudaHostGetDevicePointer", e);
    l.flag = reinterpret_cast<volatile uint32_t*>(host);
    l.flag_device = reinterpret_cast<CUdeviceptr>(dev);
    CUresult r = write_value_(l.stream, l.flag_device, 1, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS || cudaStreamSynchronize(l.stream) != cudaSuccess || *l.flag != 1) {
      cudaGetLastError();
      wait_ = WaitKind::kPoll;  // this driver will not write host memory from the stream
      return Status::Ok();
    }
    l.seq = 1;
  }
  return Status::Ok();
}

Status CudaBackend::Init(const BackendOptions& options, const std::vector<int>& ordinals) {
  auto wait = ResolveCudaWait(options, std::getenv("PAAM_CUDA_WAIT"));
  if (!wait.ok()) return Status(Errc::kInvalidArgument, "cuda: " + wait.status().message());
  wait_ = wait->kind;
  nap_ns_ = static_cast<int64_t>(wait->nap_us) * 1000;
  spin_levels_ = options.spin_levels;
  if (options.gpu_slice_us < 1 || options.gpu_slice_us > 10'000) {
    return Status(Errc::kInvalidArgument,
                  "cuda: gpu_slice_us must be 1..10000, got " + std::to_string(options.gpu_slice_us));
  }
  preempt_ = options.gpu_preempt;
  slice_ns_ = static_cast<uint64_t>(options.gpu_slice_us) * 1000;
  if (Flagged()) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess && fn != nullptr) {
      write_value_ = reinterpret_cast<WriteValueFn>(fn);
    } else {
      cudaGetLastError();
      wait_ = WaitKind::kPoll;
    }
  }
  {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess && fn != nullptr) {
      address_range_ = reinterpret_cast<AddressRangeFn>(fn);
    } else {
      cudaGetLastError();
    }
  }

  // The usable number of levels is the smallest range over the chosen GPUs.
  int least = 0, greatest = 0, device_levels = 1 << 30;
  for (int ord : ordinals) {
    DeviceGuard guard(ord);
    int lo = 0, hi = 0;
    cudaError_t e = cudaDeviceGetStreamPriorityRange(&lo, &hi);
    if (e != cudaSuccess) return CudaFail(Errc::kInvalidArgument, "cudaDeviceGetStreamPriorityRange", e);
    if (lo - hi + 1 < device_levels) {
      device_levels = lo - hi + 1;
      least = lo;
      greatest = hi;
    }
  }
  levels_ = std::clamp(options.levels, 1, device_levels);
  priority_.resize(levels_);
  lane_offset_.resize(levels_);
  // The paper's lowest bucket runs best-effort kernels concurrently, on several streams.
  lanes_ = LanesPerLevel(options, levels_,
                         options.best_effort_lanes > 0 ? options.best_effort_lanes : kDefaultBestEffortLanes);
  int lanes_total = 0;
  for (int l = 0; l < levels_; ++l) {
    // level 0 → greatest (most urgent), level levels_-1 → least; one level → the default (least)
    priority_[l] = levels_ == 1 ? least
                                : greatest + (l * (least - greatest) + (levels_ - 1) / 2) / (levels_ - 1);
    lane_offset_[l] = lanes_total;
    lanes_total += Lanes(l);
  }

  for (int ord : ordinals) {
    DeviceGuard guard(ord);
    Unit u;
    u.ordinal = ord;
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, ord) == cudaSuccess) u.device_name = prop.name;
    int rc = cuda::PrepareCudaKernels(ord);
    if (rc != 0) return CudaFail(Errc::kInvalidArgument, "loading kernels on GPU " + std::to_string(ord),
                                 static_cast<cudaError_t>(rc));
    u.lanes.resize(lanes_total);
    units_.push_back(std::move(u));  // pushed first so that the destructor frees partial work
    Unit& unit = units_.back();
    for (int l = 0; l < levels_; ++l) {
      for (int j = 0; j < Lanes(l); ++j) {
        Lane& lane = unit.lanes[lane_offset_[l] + j];
        cudaError_t e = cudaStreamCreateWithPriority(&lane.stream, cudaStreamNonBlocking, priority_[l]);
        if (e != cudaSuccess) return CudaFail(Errc::kResourceExhausted, "cudaStreamCreateWithPriority", e);
        for (cudaEvent_t* ev : {&lane.issued, &lane.kernel_begin, &lane.kernel_end}) {
          e = cudaEventCreateWithFlags(ev, cudaEventDefault);
          if (e != cudaSuccess) return CudaFail(Errc::kResourceExhausted, "cudaEventCreate", e);
        }
        e = cudaEventCreateWithFlags(&lane.done,
                                     wait_ == WaitKind::kBlock ? cudaEventBlockingSync : cudaEventDefault);
        for (cudaEvent_t& ev : lane.slice_done) {
          if (e == cudaSuccess && preempt_) e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
        }
        if (e != cudaSuccess) return CudaFail(Errc::kResourceExhausted, "cudaEventCreate", e);
      }
    }
    unit.cancel = std::make_unique<CudaCancelWords>();
    if (Status cs = unit.cancel->Allocate(unit.lanes.size()); !cs.ok()) return cs;
    if (preempt_) {
      unit.preempt = std::make_unique<CudaPreemptWords>();
      if (Status ps = unit.preempt->Allocate(levels_, unit.lanes.size()); !ps.ok()) return ps;
    }
    if (Flagged()) {
      Status fs = SetUpFlags(&unit);
      if (!fs.ok()) return fs;
    }
  }
  return Status::Ok();
}

Status CudaBackend::PrepareWorker(int unit, int level, int lane, std::string* note) {
  if (LaneOf(unit, level, lane) == nullptr) {
    return Status(Errc::kInvalidArgument, "cuda: no worker (unit " + std::to_string(unit) + ", level " +
                                              std::to_string(level) + ", lane " + std::to_string(lane) + ")");
  }
  const Unit& u = units_[unit];
  cudaError_t e = cudaSetDevice(u.ordinal);
  if (e != cudaSuccess) return CudaFail(Errc::kSystemError, "cudaSetDevice", e);
  if (note != nullptr) {
    const WaitKind wait = WaitOf(level);
    *note = "cuda: GPU " + std::to_string(u.ordinal) + " (" + u.device_name + "), stream priority " +
            std::to_string(priority_[level]) +
            (wait == WaitKind::kSpin   ? ", spin wait"
             : wait == WaitKind::kPoll ? ", poll wait"
             : wait == WaitKind::kNap  ? ", nap wait (" + std::to_string(nap_ns_ / 1000) + " us)"
                                       : ", blocking wait");
  }
  return Status::Ok();
}

Status CudaBackend::AttachRegion(RegionMemory* region) {
  if (region == nullptr) return Status(Errc::kInvalidArgument, "cuda: null region");
  if (region->backend_state != nullptr) return Status(Errc::kInvalidArgument, "cuda: region attached twice");
  if (region->device_index < 0 || region->device_index >= Units()) {
    return Status(Errc::kInvalidArgument, "cuda: region names unit " + std::to_string(region->device_index) +
                                              " of " + std::to_string(Units()));
  }
  auto st = std::make_unique<RegionState>();
  st->ordinal = units_[region->device_index].ordinal;
  st->input_capacity = region->input_capacity;
  st->output_capacity = region->output_capacity;
  DeviceGuard guard(st->ordinal);

  auto cleanup = [&st]() {
    if (st->d_input != nullptr) cudaFree(st->d_input);
    if (st->d_output != nullptr) cudaFree(st->d_output);
    for (void* p : st->pinned) {
      if (p != nullptr) cudaHostUnregister(p);
    }
  };
  // Pin the whole mapping when known, else the input and output areas. Portable: usable from
  // every GPU's context. Memory someone already pinned (a direct-mode caller) is used as is.
  struct Range { void* p; uint64_t n; };
  std::vector<Range> ranges;
  if (region->base != nullptr && region->mapping_bytes > 0) {
    ranges.push_back({region->base, region->mapping_bytes});
  } else {
    if (region->input != nullptr && region->input_capacity > 0) ranges.push_back({region->input, region->input_capacity});
    if (region->output != nullptr && region->output_capacity > 0) ranges.push_back({region->output, region->output_capacity});
    if (ranges.size() == 2) {
      // Areas that share or nearly share pages (one buffer split in two) are pinned as one
      // range: pinning the second would fail on the page they have in common.
      auto lo = [](const Range& r) { return reinterpret_cast<uintptr_t>(r.p); };
      auto hi = [](const Range& r) { return reinterpret_cast<uintptr_t>(r.p) + r.n; };
      const uintptr_t begin = std::min(lo(ranges[0]), lo(ranges[1]));
      const uintptr_t end = std::max(hi(ranges[0]), hi(ranges[1]));
      const uintptr_t gap = lo(ranges[0]) < lo(ranges[1]) ? lo(ranges[1]) - std::min(hi(ranges[0]), lo(ranges[1]))
                                                          : lo(ranges[0]) - std::min(hi(ranges[1]), lo(ranges[0]));
      if (gap < (uintptr_t{1} << 16)) ranges = {{reinterpret_cast<void*>(begin), end - begin}};
    }
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    cudaError_t e = cudaHostRegister(ranges[i].p, ranges[i].n, cudaHostRegisterPortable);
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
      cudaGetLastError();  // not sticky; clear it
      continue;
    }
    if (e != cudaSuccess) {
      cleanup();
      return CudaFail(Errc::kResourceExhausted, "cudaHostRegister of " + std::to_string(ranges[i].n) + " bytes", e);
    }
    st->pinned[i] = ranges[i].p;
  }
  // Device buffers: at least 256 bytes each so that kernels with tiny outputs have room.
  cudaError_t e = cudaMalloc(&st->d_input, std::max<uint64_t>(st->input_capacity, 256));
  if (e == cudaSuccess) e = cudaMalloc(&st->d_output, std::max<uint64_t>(st->output_capacity, 256));
  if (e != cudaSuccess) {
    cleanup();
    return CudaFail(Errc::kResourceExhausted,
                    "cudaMalloc of " + std::to_string(st->input_capacity + st->output_capacity) +
                        " bytes on GPU " + std::to_string(st->ordinal), e);
  }
  if (region->device) {
    // The client's own device buffers (CUDA IPC): opened here, once, never on the hot path.
    const DeviceBuffers& d = *region->device;
    Status bad;
    if (d.gpu != st->ordinal) {
      bad = Status(Errc::kInvalidArgument, "cuda: device buffers live on GPU " + std::to_string(d.gpu) +
                                               " but the region is placed on GPU " + std::to_string(st->ordinal));
    }
    if (bad.ok()) {
      auto in = OpenIpc(d.input_handle, st->ordinal, d.input_offset, d.input_bytes, "input");
      if (in.ok()) {
        st->ipc[0] = in.value();
        auto out = OpenIpc(d.output_handle, st->ordinal, d.output_offset, d.output_bytes, "output");
        if (out.ok()) {
          st->ipc[1] = out.value();
        } else {
          bad = out.status();
        }
      } else {
        bad = in.status();
      }
    }
    if (!bad.ok()) {
      for (void*& p : st->ipc) {
        if (p != nullptr) CloseIpc(p);
        p = nullptr;
      }
      cleanup();
      return bad;
    }
    region->device_input = static_cast<char*>(st->ipc[0]) + d.input_offset;
    region->device_output = static_cast<char*>(st->ipc[1]) + d.output_offset;
  }
  region->backend_state = st.release();
  return Status::Ok();
}

Result<void*> CudaBackend::OpenIpc(const IpcHandle& handle, int ordinal, uint64_t offset, uint64_t bytes,
                                   const char* what) {
  std::lock_guard<std::mutex> lock(ipc_mu_);
  void* base = nullptr;
  OpenedIpc* entry = nullptr;
  for (OpenedIpc& o : ipc_) {
    if (o.handle == handle && o.ordinal == ordinal) entry = &o;
  }
  if (entry != nullptr) {
    base = entry->base;
  } else {
    cudaIpcMemHandle_t h;
    static_assert(sizeof(h) == kIpcHandleBytes, "cudaIpcMemHandle_t is 64 bytes");
    std::memcpy(&h, handle.data(), sizeof(h));
    DeviceGuard guard(ordinal);
    cudaError_t e = cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return Status(Errc::kInvalidArgument, std::string("cuda: cannot open the ") + what +
                                                " buffer's IPC handle on GPU " + std::to_string(ordinal) + ": " +
                                                CudaText(e) + " (a handle from cudaIpcGetMemHandle of a live "
                                                "allocation in another process is needed)");
    }
  }
  // The buffer must lie inside the allocation the handle stands for.
  if (address_range_ != nullptr) {
    CUdeviceptr alloc_base = 0;
    size_t alloc_size = 0;
    CUresult r = address_range_(&alloc_base, &alloc_size, reinterpret_cast<CUdeviceptr>(base));
    Status bad;
    if (r != CUDA_SUCCESS) {
      bad = Status(Errc::kInvalidArgument, std::string("cuda: cannot size the ") + what +
                                               " buffer's allocation (cuMemGetAddressRange error " +
                                               std::to_string(static_cast<int>(r)) + ")");
    } else {
      const uint64_t avail = alloc_size - (reinterpret_cast<CUdeviceptr>(base) - alloc_base);
      if (offset > avail || bytes > avail - offset) {
        bad = Status(Errc::kInputTooLarge, std::string("cuda: the ") + what + " buffer declares " +
                                               std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                                               " but its allocation holds " + std::to_string(avail) + " bytes");
      }
    }
    if (!bad.ok()) {
      if (entry == nullptr) {
        DeviceGuard guard(ordinal);
        cudaIpcCloseMemHandle(base);
      }
      return bad;
    }
  }
  if (entry != nullptr) {
    ++entry->refs;
  } else {
    ipc_.push_back(OpenedIpc{handle, ordinal, base, 1});
  }
  return base;
}

void CudaBackend::CloseIpc(void* base) {
  std::lock_guard<std::mutex> lock(ipc_mu_);
  for (auto it = ipc_.begin(); it != ipc_.end(); ++it) {
    if (it->base != base) continue;
    if (--it->refs == 0) {
      DeviceGuard guard(it->ordinal);
      cudaIpcCloseMemHandle(it->base);
      ipc_.erase(it);
    }
    return;
  }
}

void CudaBackend::DetachRegion(RegionMemory* region) {
  if (region == nullptr || region->backend_state == nullptr) return;
  auto* st = static_cast<RegionState*>(region->backend_state);
  {
    DeviceGuard guard(st->ordinal);
    cudaFree(st->d_input);
    cudaFree(st->d_output);
    for (void* p : st->pinned) {
      if (p != nullptr) cudaHostUnregister(p);
    }
  }
  for (void* p : st->ipc) {
    if (p != nullptr) CloseIpc(p);
  }
  delete st;
  region->backend_state = nullptr;
  region->device_input = nullptr;
  region->device_output = nullptr;
}

cudaError_t CudaBackend::Wait(Lane* l, WaitKind wait) const {
  if (wait == WaitKind::kBlock) return cudaEventSynchronize(l->done);
  cudaError_t e;
  if (wait == WaitKind::kPoll) {
    while ((e = cudaEventQuery(l->done)) == cudaErrorNotReady) CpuRelax();
    return e;
  }
  const uint32_t want = ++l->seq;
  CUresult r = write_value_(l->stream, l->flag_device, want, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS) {
    while ((e = cudaEventQuery(l->done)) == cudaErrorNotReady) CpuRelax();
    return e;
  }
  // SYNC POINT: the stream's write of `want` follows (in stream order, behind a system fence)
  // the output copy, so seeing it means the output is in host memory.
  if (wait == WaitKind::kNap) {
    thread_local bool fine_slack = false;
    if (!fine_slack) {  // a nap is short: keep the kernel's default 50 us slack off it
      prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
      fine_slack = true;
    }
    // First spin for one nap's length: a short request completes at spin's speed, and a long
    // one costs at most that much CPU before its worker sleeps.
    const uint64_t spin_until = NowNs() + static_cast<uint64_t>(nap_ns_);
    while (__atomic_load_n(l->flag, __ATOMIC_ACQUIRE) != want) {
      CpuRelax();
      if (NowNs() >= spin_until) break;
    }
    const timespec nap{0, static_cast<long>(nap_ns_)};
    const uint32_t naps_per_query = static_cast<uint32_t>(std::max<int64_t>(1, 1000000 / nap_ns_));
    uint32_t naps = 0;
    while (__atomic_load_n(l->flag, __ATOMIC_ACQUIRE) != want) {
      nanosleep(&nap, nullptr);
      if (++naps % naps_per_query == 0) {  // about once a millisecond: catch a failed stream
        e = cudaEventQuery(l->done);
        if (e != cudaSuccess && e != cudaErrorNotReady) return e;
      }
    }
    return cudaSuccess;
  }
  uint32_t spins = 0;
  while (__atomic_load_n(l->flag, __ATOMIC_ACQUIRE) != want) {
    CpuRelax();
    if ((++spins & 0x3ffu) == 0) {  // now and then ask the driver, to catch a failed stream
      e = cudaEventQuery(l->done);
      if (e != cudaSuccess && e != cudaErrorNotReady) return e;
    }
  }
  return cudaSuccess;
}

Result<RegionState*> CudaBackend::ImplicitState(const RegionMemory& region) {
  std::lock_guard<std::mutex> lock(implicit_mu_);
  for (auto& r : implicit_) {
    if (r->input == region.input && r->output == region.output && r->input_capacity == region.input_capacity &&
        r->output_capacity == region.output_capacity && r->unit == region.device_index) {
      return static_cast<RegionState*>(r->memory.backend_state);
    }
  }
  auto r = std::make_unique<Implicit>(Implicit{region.input, region.output, region.input_capacity,
                                               region.output_capacity, region.device_index, region});
  r->memory.backend_state = nullptr;
  Status s = AttachRegion(&r->memory);
  if (!s.ok()) return s;
  auto* st = static_cast<RegionState*>(r->memory.backend_state);
  implicit_.push_back(std::move(r));
  return st;
}

Status CudaBackend::Run(const KernelCall& call, int level, int lane, DeviceTimes* times) {
  RegionMemory* region = call.region;
  if (region == nullptr || call.kernel == nullptr) return Status(Errc::kInvalidArgument, "cuda: no region or kernel");
  RegionState* st = static_cast<RegionState*>(region->backend_state);
  if (st == nullptr) {
    auto found = ImplicitState(*region);
    if (!found.ok()) return found.status();
    st = found.value();
  }
  Lane* l = LaneOf(region->device_index, level, lane);
  if (l == nullptr) return Status(Errc::kInvalidArgument, "cuda: no such level/lane");
  if (!call.kernel->HasCuda()) {
    return Status(Errc::kUnknownKernel, "cuda: kernel '" + call.kernel->name + "' has no CUDA version");
  }
  void* d_input = st->d_input;
  void* d_output = st->d_output;
  const bool copy = !call.device_data;
  if (call.device_data) {  // the client's own device buffers, opened at AttachRegion: no copies
    if (!region->device || region->device_input == nullptr || region->device_output == nullptr) {
      return Status(Errc::kInvalidArgument, "cuda: region has no device buffers");
    }
    if (call.input_bytes > region->device->input_bytes) {
      return Status(Errc::kInputTooLarge, "cuda: input exceeds the device buffer");
    }
    if (call.output_bytes > region->device->output_bytes) {
      return Status(Errc::kOutputTooLarge, "cuda: output exceeds the device buffer");
    }
    d_input = region->device_input;
    d_output = region->device_output;
  } else {
    if (call.input_bytes > st->input_capacity) return Status(Errc::kInputTooLarge, "cuda: input exceeds region");
    if (call.output_bytes > st->output_capacity) return Status(Errc::kOutputTooLarge, "cuda: output exceeds region");
  }

  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != st->ordinal) {
    cudaError_t e = cudaSetDevice(st->ordinal);
    if (e != cudaSuccess) return CudaFail(Errc::kKernelFailed, "cudaSetDevice", e);
  }
  cudaStream_t s = l->stream;
  // The built-in kernels look at the server's cancel word: this lane's own (CancelWord).
  Unit& unit = units_[region->device_index];
  const CudaCancelWords* cancel = unit.cancel.get();
  const size_t lane_index = static_cast<size_t>(l - unit.lanes.data());
  const bool cancellable = call.ticket != 0 && call.cancel != nullptr && call.cancel == cancel->Word(lane_index);
  // Preemption (cuda_preempt.h): counted into the lower levels' words while it runs; a lower
  // level's request waits for more urgent work before it starts and after each pause.
  const MoreUrgent urgent{unit.preempt.get(), &depth_, region->device_index, level};
  std::optional<PreemptScope> preempt;
  if (preempt_) {
    preempt.emplace(urgent, unit.preempt.get(), lane_index, slice_ns_);
    if (!preempt->HoldBack(call.cancel, call.ticket)) {
      return Status(Errc::kCancelled, "cuda: kernel '" + call.kernel->name + "' was cancelled before it started");
    }
  }
  cudaError_t e = cudaSuccess;
  uint64_t issued_ns = 0;
  const WaitKind wait = WaitOf(level);
  if (Sleeps(wait) && times != nullptr) {
    issued_ns = NowNs();
    e = cudaEventRecord(l->issued, s);
  }
  if (e == cudaSuccess && copy && call.input_bytes > 0) {
    e = cudaMemcpyAsync(d_input, region->input, call.input_bytes, cudaMemcpyHostToDevice, s);
  }
  if (e == cudaSuccess) e = cudaEventRecord(l->kernel_begin, s);
  int krc = PAAM_KERNEL_OK;
  char kerr[160] = {0};  // a version 2 kernel's message
  paam_kernel_args args{};
  args.input = d_input;
  args.input_bytes = call.input_bytes;
  args.output = d_output;
  args.output_bytes = call.output_bytes;
  std::memcpy(args.params, call.params, sizeof(args.params));
  args.device = PAAM_DEVICE_CUDA;
  args.stream = s;
  args.level = level;
  args.device_index = st->ordinal;
  args.host_input = copy ? region->input : nullptr;
  bool sliced_cancel = false;  // cancelled between two slices of a plugin kernel
  auto launch = [&](bool resume) {
    if (cancellable) cuda::SetCudaCancel(cancel->Kernels(lane_index, call.ticket));
    const uint64_t slices = preempt && preempt->Preemptible() ? call.kernel->CudaSlices(&args) : 0;
    if (preempt && slices == 0) preempt->Arm(resume);  // the built-ins' own slices
    krc = slices > 0 ? RunHostSliced(*call.kernel, &args, slices, l->slice_done, urgent, call.cancel, call.ticket,
                                     &sliced_cancel, kerr, sizeof(kerr))
                     : call.kernel->RunCuda(&args, kerr, sizeof(kerr));
    if (preempt) PreemptScope::Disarm();
    if (cancellable) cuda::SetCudaCancel({});
    e = cudaGetLastError();
  };
  // The kernel's end, the output copy, then the wait for all the stream work.
  uint64_t seen = 0;
  auto settle = [&] {
    if (e == cudaSuccess && krc == PAAM_KERNEL_OK) {
      e = cudaEventRecord(l->kernel_end, s);
      if (e == cudaSuccess && copy && call.output_bytes > 0) {
        e = cudaMemcpyAsync(region->output, d_output, call.output_bytes, cudaMemcpyDeviceToHost, s);
      }
    }
    // Whatever happened, wait for what was enqueued: the buffers must be idle when Run returns.
    cudaError_t re = cudaEventRecord(l->done, s);
    cudaError_t we = re == cudaSuccess ? Wait(l, wait) : cudaStreamSynchronize(s);
    seen = NowNs();
    if (e == cudaSuccess) e = re;
    if (e == cudaSuccess) e = we;
  };
  if (e == cudaSuccess) launch(false);
  settle();
  // Paused for more urgent work: once it is gone, the kernel takes up where it stopped (the
  // output copied meanwhile is copied again).
  while (e == cudaSuccess && krc == PAAM_KERNEL_OK && preempt && preempt->Paused()) {
    if (!preempt->HoldBack(call.cancel, call.ticket)) {
      return Status(Errc::kCancelled, "cuda: kernel '" + call.kernel->name + "' was cancelled while paused");
    }
    launch(true);
    settle();
  }
  if (sliced_cancel) return Status(Errc::kCancelled, kerr);
  if (e != cudaSuccess && Sticky(e)) MarkLost(region->device_index);  // the fallback takes over
  if (e != cudaSuccess) return CudaFail(Errc::kKernelFailed, call.kernel->name, e);
  if (krc != PAAM_KERNEL_OK && kerr[0] != '\0') {
    return Status(krc == PAAM_KERNEL_EINVAL ? Errc::kInvalidArgument : Errc::kKernelFailed, kerr);
  }
  if (krc != PAAM_KERNEL_OK) {
    return Status(Errc::kKernelFailed, "cuda: kernel '" + call.kernel->name + "' returned " + std::to_string(krc));
  }
  if (cancellable && cancel->Stopped(lane_index, call.ticket, s)) {
    return Status(Errc::kCancelled, "cuda: kernel '" + call.kernel->name + "' was stopped at a slice");
  }
  if (times != nullptr) {
    // The events give durations on the device; one host time anchors them. The true times
    // lie between the two anchors' estimates: from the issue (the stream was idle, so
    // `issued` runs at most the GPU's pick-up delay after issued_ns: early by that) and from
    // the completion seen (late by however late the wait saw it). A spinning wait sees it
    // within a microsecond; a sleeping one up to a whole nap or a driver wake-up later, which
    // the completion anchor would put into the launch (picked -> device_start).
    const auto ns = [](float ms) { return static_cast<uint64_t>(static_cast<double>(ms) * 1e6); };
    float kernel_ms = 0;
    cudaEventElapsedTime(&kernel_ms, l->kernel_begin, l->kernel_end);
    if (issued_ns != 0) {
      float lead_ms = 0;
      cudaEventElapsedTime(&lead_ms, l->issued, l->kernel_begin);
      times->start_ns = std::min(issued_ns + ns(lead_ms), seen);
      times->end_ns = std::min(times->start_ns + ns(kernel_ms), seen);
    } else {
      float tail_ms = 0;
      cudaEventElapsedTime(&tail_ms, l->kernel_end, l->done);
      times->end_ns = seen - ns(tail_ms);
      times->start_ns = times->end_ns - ns(kernel_ms);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Backend>> CreateCudaBackend(const BackendOptions& options, KernelRegistry* registry) {
  if (!options.direct) ReserveCudaHardwareQueues();
  std::string why;
  const int count = CudaDeviceCount(&why);
  if (count == 0) return Status(Errc::kInvalidArgument, "cuda backend: " + why);
  auto ordinals = ParseCudaDevices(options.cuda_devices, count);
  if (!ordinals.ok()) return ordinals.status();
  auto backend = std::make_unique<CudaBackend>();
  Status s = backend->Init(options, ordinals.value());
  if (!s.ok()) return s;
  if (registry != nullptr) AttachCudaBuiltins(registry);
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace paam
