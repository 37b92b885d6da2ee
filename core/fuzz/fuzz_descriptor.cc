// fuzz/fuzz_descriptor.cc — what a client writes into its shared-memory ring: the head and the
// 80-byte request descriptors the dispatcher copies out of the slots. The target does what
// DrainSession (server/dispatcher.cc) does with them: RingWindowOk on head and the server's own
// tail, the region index against the registration, then CheckDescriptor against the region's
// kernel and memory as registered (fuzzed too: capacities, device buffers). For each accepted
// descriptor it runs the kernel's CPU version on buffers of exactly the checked input size and
// the planned output size, so AddressSanitizer sees any access that the checks let through.
// The kernels are the built-ins and the example plugin (kernels/example_plugin.c); `spin` is
// checked but not run (it occupies the CPU for up to 60 s by design).
// Input layout: fuzz_inputs.h (DescriptorInput, then the slots).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "fuzz_check.h"
#include "fuzz_inputs.h"
#include "kernels/registry.h"
#include "server/descriptor_check.h"

extern "C" const paam_kernel* paam_plugin_kernels(uint32_t abi_version, uint32_t* count);

using namespace paam;

namespace {

const KernelRegistry& Registry() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry(KernelRegistry::WithBuiltins());
    uint32_t n = 0;
    const paam_kernel* k = paam_plugin_kernels(PAAM_KERNEL_ABI_VERSION, &n);
    for (uint32_t i = 0; i < n; ++i) PAAM_FUZZ_CHECK(r->Add(k[i]).ok());
    return r;
  }();
  return *registry;
}

uint64_t Area(uint16_t v) { return v % (fuzz::kMaxAreaBytes + 1); }

// Runs the kernel as a worker would, on heap buffers of exactly the sizes the checks allowed.
void Run(const KernelEntry& kernel, const shm::RequestDescriptor& d, uint64_t output_bytes) {
  if (kernel.name == "spin" || kernel.run_cpu == nullptr) return;
  std::unique_ptr<uint8_t[]> input(new uint8_t[d.input_bytes ? d.input_bytes : 1]);
  std::unique_ptr<uint8_t[]> output(new uint8_t[output_bytes ? output_bytes : 1]);
  for (uint64_t i = 0; i < d.input_bytes; ++i) input[i] = static_cast<uint8_t>(i * 131 + 7);
  paam_kernel_args a{};
  a.input = input.get();  // never null: the server passes the region's areas, even for 0 bytes
  a.input_bytes = d.input_bytes;
  a.output = output.get();
  a.output_bytes = output_bytes;
  std::memcpy(a.params, d.params, sizeof(a.params));
  a.device = PAAM_DEVICE_CPU;
  (void)kernel.run_cpu(&a);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const KernelRegistry& registry = Registry();
  fuzz::DescriptorInput in{};
  if (size < sizeof(in)) return -1;
  std::memcpy(&in, data, sizeof(in));
  data += sizeof(in);
  size -= sizeof(in);

  // The server's private record of the registration (never read from shared memory).
  const uint32_t regions = in.regions % fuzz::kMaxRegions + 1;
  const KernelEntry* kernels[fuzz::kMaxRegions];
  RegionMemory memory[fuzz::kMaxRegions];
  static char device_dummy;
  for (uint32_t i = 0; i < regions; ++i) {
    const fuzz::RegionInput& r = in.region[i];
    kernels[i] = registry.Get(static_cast<uint32_t>(r.kernel % registry.size()));
    memory[i].input_capacity = Area(r.input_capacity);
    memory[i].output_capacity = Area(r.output_capacity);
    if (r.device & 1) {
      DeviceBuffers b;
      b.input_bytes = Area(r.device_input_bytes);
      b.output_bytes = Area(r.device_output_bytes);
      memory[i].device = b;
      memory[i].device_input = memory[i].device_output = &device_dummy;  // attached by the backend
    }
  }

  // The ring: slots as the client left them.
  shm::RequestDescriptor slots[shm::kRingCapacity];
  std::memset(slots, 0, sizeof(slots));
  std::memcpy(slots, data, std::min(size, sizeof(slots)));

  if (in.head == in.tail || !RingWindowOk(in.head, in.tail)) return 0;
  PAAM_FUZZ_CHECK(in.head - in.tail <= shm::kRingCapacity);
  for (uint64_t tail = in.tail; tail != in.head; ++tail) {
    shm::RequestDescriptor d;
    std::memcpy(&d, &slots[tail % shm::kRingCapacity], sizeof(d));
    if (d.region >= regions) continue;
    const KernelEntry& kernel = *kernels[d.region];
    const RegionMemory& m = memory[d.region];
    char err[shm::kErrorTextBytes];
    uint64_t out_bytes = 0;
    const Errc code = CheckDescriptor(d, kernel, m, &out_bytes, err, sizeof(err));
    if (code != Errc::kOk) {
      PAAM_FUZZ_CHECK(std::memchr(err, '\0', sizeof(err)) != nullptr);  // Complete() copies it as a C string
      continue;
    }
    const bool device_data = (d.flags & shm::kFlagDeviceData) != 0;
    PAAM_FUZZ_CHECK((d.flags & ~shm::kKnownFlags) == 0);
    PAAM_FUZZ_CHECK(!device_data || m.device.has_value());
    PAAM_FUZZ_CHECK(d.input_bytes <= (device_data ? m.device->input_bytes : m.input_capacity));
    PAAM_FUZZ_CHECK(out_bytes <= (device_data ? m.device->output_bytes : m.output_capacity));
    // The deadline, for a server clock and cap drawn from the input: never before the
    // (clamped) submission, never past the cap after the dequeue, whatever the client dated it.
    const uint64_t now = in.head * 0x9e3779b97f4a7c15ull, cap = d.sequence >> (d.sequence & 63);
    const uint64_t deadline = RequestDeadline(d, now, cap);
    const uint64_t start = std::min(d.submit_ns, now);
    auto within = [&](uint64_t limit) { return deadline - start <= limit || deadline == UINT64_MAX; };
    PAAM_FUZZ_CHECK(deadline >= start);
    PAAM_FUZZ_CHECK(cap == 0 || (within(cap) && (deadline != UINT64_MAX || start >= UINT64_MAX - cap)));
    PAAM_FUZZ_CHECK(d.time_limit_ns == 0 || within(d.time_limit_ns));
    PAAM_FUZZ_CHECK(cap != 0 || d.time_limit_ns != 0 || deadline == UINT64_MAX);
    // The absolute deadline (--queue edf, the fallback), for a relative deadline drawn from the
    // input: none without one, else never before the dequeue nor more than one relative
    // deadline after it, whatever release and submission the client wrote.
    const uint64_t relative = d.params[3] >> (d.params[3] & 63);
    const uint64_t due = RequestDue(d, now, relative);
    PAAM_FUZZ_CHECK(relative != 0 || due == UINT64_MAX);
    PAAM_FUZZ_CHECK(relative == 0 || (due >= now && due != UINT64_MAX &&
                                      (due - now <= relative || now > UINT64_MAX - relative)));
    Run(kernel, d, out_bytes);
  }
  return 0;
}
