// fuzz/make_corpus.cc — writes the seed corpus of the fuzz targets (core/fuzz/corpus/<target>/)
// from the encoders: valid messages of each kind, rings of valid requests for every kernel, and
// registration sequences with timing models. Deterministic; run it to regenerate the seeds:
//   build/fuzz/core/fuzz/paam_fuzz_corpus core/fuzz/corpus
// fuzz_analysis (FuzzedDataProvider input) gets a few fixed pseudo-random inputs.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_inputs.h"
#include "protocol/wire.h"
#include "shm/layout.h"
#include "tensors/tensor_table.h"

using namespace paam;

namespace {

std::string g_root;

void Write(const std::string& target, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string dir = g_root + "/" + target;
  mkdir(g_root.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

template <typename T>
void Append(std::vector<uint8_t>* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

KernelDecl Kernel(const char* name, uint64_t in, uint64_t out) {
  KernelDecl k;
  k.name = name;
  k.max_input_bytes = in;
  k.max_output_bytes = out;
  return k;
}

TimingModel Model(const char* chain, uint32_t index, uint32_t length, double period, std::vector<double> segments,
                  const char* executor, int cpu, int prio) {
  TimingModel t;
  t.chain = chain;
  t.callback_index = index;
  t.chain_length = length;
  t.period_ms = period;
  t.deadline_ms = period;
  t.cpu_wcet_ms = 1.0;
  t.segments_ms = std::move(segments);
  t.executor = executor;
  t.executor_cpu = cpu;
  t.executor_priority = prio;
  return t;
}

wire::RegisterRequest Request(uint32_t priority, std::vector<KernelDecl> kernels,
                              std::optional<TimingModel> timing = std::nullopt) {
  wire::RegisterRequest r;
  r.version = shm::kProtocolVersion;
  r.chain_priority = priority;
  for (size_t i = 0; i < r.callback_uuid.size(); ++i) r.callback_uuid[i] = static_cast<uint8_t>(i * 17);
  r.client_name = "seed";
  r.kernels = std::move(kernels);
  r.timing = std::move(timing);
  return r;
}

void WireSeeds() {
  Write("fuzz_wire", "register_one_kernel", wire::Encode(Request(10, {Kernel("vector_add", 4096, 2048)})));
  wire::RegisterRequest timed = Request(30, {Kernel("matmul", 1 << 16, 1 << 14), Kernel("histogram", 4096, 1024),
                                             Kernel("spin", 0, 8)},
                                        Model("perception", 1, 3, 50, {2.5, 1.0}, "exec_a", 2, 80));
  timed.wait = WaitMode::kHybrid;
  timed.unit = 1;
  Write("fuzz_wire", "register_timed", wire::Encode(timed));
  KernelDecl dev = Kernel("vector_add", 256, 128);
  DeviceBuffers b;
  b.input_handle.fill(0xab);
  b.output_handle.fill(0xcd);
  b.input_bytes = 1 << 20;
  b.output_bytes = 1 << 19;
  b.gpu = 0;
  dev.device = b;
  Write("fuzz_wire", "register_device", wire::Encode(Request(5, {dev})));

  wire::RegisterReply ok;
  ok.version = shm::kProtocolVersion;
  ok.client_id = 7;
  ok.bucket = 1;
  ok.buckets = 4;
  ok.server_pid = 1234;
  ok.admission = "admitted: no admission control";
  ok.doorbell_bytes = sizeof(shm::DoorbellHeader);
  ok.channel_bytes = sizeof(shm::ChannelHeader);
  ok.regions.push_back({"vector_add", 0, 4096, 2048, 12288});
  ok.regions.push_back({"spin", 4, 0, 8, 8192});
  Write("fuzz_wire", "reply_ok", wire::Encode(ok));
  wire::RegisterReply refused;
  refused.version = shm::kProtocolVersion;
  refused.status = Errc::kNotAdmitted;
  refused.message = "chain 'c2' would miss its deadline 50.000 ms by 3.200 ms";
  Write("fuzz_wire", "reply_refused", wire::Encode(refused));
  Write("fuzz_wire", "deregister", wire::EncodeDeregister());
  Write("fuzz_wire", "deregister_reply", wire::EncodeDeregisterReply());

  // Control messages of the tools (statistics, trace).
  wire::ControlRequest stats;
  stats.kind = wire::MessageKind::kStats;
  stats.offset = 61440;
  Write("fuzz_wire", "stats", wire::Encode(stats));
  wire::ControlRequest trace_start;
  trace_start.kind = wire::MessageKind::kTraceStart;
  trace_start.capacity = 1u << 16;
  Write("fuzz_wire", "trace_start", wire::Encode(trace_start));
  wire::ControlRequest trace_read;
  trace_read.kind = wire::MessageKind::kTraceRead;
  Write("fuzz_wire", "trace_read", wire::Encode(trace_read));
  wire::ControlReply stats_reply;
  stats_reply.total = 100000;
  stats_reply.offset = 61440;
  stats_reply.payload = "{\"server\": {\"pid\": 1234}, \"clients\": []}";
  Write("fuzz_wire", "stats_reply", wire::Encode(stats_reply));
  wire::ControlReply trace_reply;
  trace_reply.kind = wire::MessageKind::kTraceReply;
  trace_reply.total = 2;
  trace_reply.more = true;
  trace_reply.payload = "{\"dropped\":0,\"clients\":{\"1\":\"cam\"},\"records\":[[1,42,10,\"noop\",0,0,0,1,\"ok\",1,2,3,4,5,6]]}";
  Write("fuzz_wire", "trace_reply", wire::Encode(trace_reply));
  wire::ControlReply refused_tool;
  refused_tool.kind = wire::MessageKind::kTraceReply;
  refused_tool.status = Errc::kBusy;
  refused_tool.message = "a trace is being recorded already (by pid 99)";
  Write("fuzz_wire", "trace_busy", wire::Encode(refused_tool));
}

// One ring: regions (kernel index, capacities), then `requests` in the slots from `tail` on.
void Ring(const char* name, uint64_t tail, uint64_t head, std::vector<fuzz::RegionInput> regions,
          const std::vector<shm::RequestDescriptor>& requests) {
  fuzz::DescriptorInput in{};
  in.tail = tail;
  in.head = head;
  in.regions = static_cast<uint32_t>(regions.size() - 1);
  for (size_t i = 0; i < regions.size(); ++i) in.region[i] = regions[i];
  shm::RequestDescriptor slots[shm::kRingCapacity];
  std::memset(slots, 0, sizeof(slots));
  for (size_t i = 0; i < requests.size(); ++i) slots[(tail + i) % shm::kRingCapacity] = requests[i];
  std::vector<uint8_t> bytes;
  Append(&bytes, in);
  // Only as many slots as hold something: libFuzzer zero-fills nothing, the target does.
  size_t used = 0;
  for (size_t i = 0; i < requests.size(); ++i) used = std::max(used, (tail + i) % shm::kRingCapacity + 1);
  bytes.insert(bytes.end(), reinterpret_cast<uint8_t*>(slots), reinterpret_cast<uint8_t*>(slots) + used * sizeof(slots[0]));
  Write("fuzz_descriptor", name, bytes);
}

shm::RequestDescriptor Desc(uint32_t region, uint64_t input_bytes, std::initializer_list<uint64_t> params,
                            uint32_t flags = 0, uint64_t submit_ns = 0, uint64_t release_ns = 0) {
  shm::RequestDescriptor d{};
  d.region = region;
  d.flags = flags;
  d.submit_ns = submit_ns;
  d.release_ns = release_ns;
  d.sequence = 1;
  d.input_bytes = input_bytes;
  size_t i = 0;
  for (uint64_t p : params) d.params[i++] = p;
  return d;
}

void DescriptorSeeds() {
  // Registry order: vector_add 0, matmul 1, reduction 2, histogram 3, spin 4, noop 5, scale 6.
  const fuzz::RegionInput add{0, 0, 4096, 2048, 0, 0}, mm{1, 0, 8192, 4096, 0, 0}, red{2, 0, 4096, 4, 0, 0},
      hist{3, 0, 1024, 1024, 0, 0}, spin{4, 0, 0, 8, 0, 0}, noop{5, 0, 512, 512, 0, 0}, scale{6, 0, 1024, 1024, 0, 0},
      add_dev{0, 1, 64, 32, 8192, 4096};
  Ring("vector_add", 0, 1, {add}, {Desc(0, 2 * 64 * 4, {64})});
  Ring("matmul", 5, 6, {mm}, {Desc(0, (8 * 4 + 4 * 8) * 4, {8, 4, 8})});
  Ring("mixed", 62, 66, {red, hist, spin, noop},
       {Desc(0, 256 * 4, {256}), Desc(1, 1000, {1000}), Desc(2, 0, {1000, 0, 50}), Desc(3, 100, {64})});
  Ring("scale", 0, 1, {scale}, {Desc(0, 64 * 4, {64, 1500})});
  // Reproducer: n = 2^62 + 1, whose n * 4 wraps to the 4 bytes of input given (the example
  // plugin's plan() used to accept it and run_scale read 2^62 floats).
  Ring("scale_n_wraps", 0, 1, {scale}, {Desc(0, 4, {(uint64_t{1} << 62) + 1, 1000})});
  Ring("device_data", 3, 5, {add_dev}, {Desc(0, 2 * 512 * 4, {512}, shm::kFlagDeviceData), Desc(0, 2 * 4 * 4, {4})});
  Ring("refused", 10, 13, {add, noop},
       {Desc(0, 8192, {1024}), Desc(1, 16, {4096}), Desc(7, 0, {0}), Desc(0, 8, {1}, 0x80)});
  Ring("broken_ring", 100, 400, {add}, {Desc(0, 8, {1})});
  // Releases (--queue edf; the target takes the relative deadline from params[3]): before the
  // submission, after it, long before it, and one whose deadline lands on UINT64_MAX (the
  // reproducer of RequestDue answering "no deadline" there).
  Ring("releases", 6, 10, {spin},
       {Desc(0, 0, {1000, 0, 0, 50'000'000}, 0, 5'000'000'000, 4'990'000'000),
        Desc(0, 0, {1000, 0, 0, 50'000'000}, 0, 5'000'000'000, 9'000'000'000),
        Desc(0, 0, {1000, 0, 0, 50'000'000}, 0, 5'000'000'000, 1),
        Desc(0, 0, {1000, 0, 0, UINT64_MAX - 63}, 0, 5'000'000'000, 63)});
}

// A registration sequence for fuzz_admission.
void Admission(const char* name, fuzz::AdmissionInput in, const std::vector<wire::RegisterRequest>& regs) {
  std::vector<uint8_t> bytes;
  Append(&bytes, in);
  for (const auto& r : regs) {
    const std::vector<uint8_t> m = wire::Encode(r);
    bytes.push_back(static_cast<uint8_t>(m.size() & 0xff));
    bytes.push_back(static_cast<uint8_t>(m.size() >> 8));
    bytes.insert(bytes.end(), m.begin(), m.end());
  }
  Write("fuzz_admission", name, bytes);
}

void AdmissionSeeds() {
  const auto k = std::vector<KernelDecl>{Kernel("matmul", 4096, 4096)};
  Admission("two_chains", {2, 5, 10, 0, 0, {}},
            {Request(20, k, Model("c_high", 0, 1, 20, {2.0}, "e1", 0, 90)),
             Request(10, k, Model("c_low", 0, 2, 100, {5.0, 3.0}, "e2", 1, 80)),
             Request(10, k, Model("c_low", 1, 2, 100, {1.0}, "e1", 0, 90))});
  Admission("best_effort_and_removal", {3, 5, 20, 10, 2, {}},
            {Request(5, k), Request(30, k, Model("c1", 0, 1, 10, {1.0}, "e1", 0, 50)),
             Request(40, k, Model("c2", 0, 1, 40, {30.0}, "e2", 0, 60)),
             Request(50, k, Model("c3", 0, 1, 15, {2.0, 2.0}, "e3", 1, 50))});
  Admission("one_bucket_overload", {0, 1, 0, 0, 0, {}},
            {Request(1, k, Model("c1", 0, 1, 10, {6.0}, "e1", 0, 50)),
             Request(2, k, Model("c2", 0, 1, 10, {6.0}, "e2", 1, 50)), Request(3, k)});
}

void AnalysisSeeds() {
  uint64_t x = 0x9e3779b97f4a7c15ull;  // splitmix64: fixed pseudo-random inputs
  for (int n = 0; n < 6; ++n) {
    std::vector<uint8_t> bytes;
    for (int i = 0; i < 64 + 64 * n; ++i) {
      x += 0x9e3779b97f4a7c15ull;
      uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      bytes.push_back(static_cast<uint8_t>(z ^ (z >> 31)));
    }
    Write("fuzz_analysis", "random_" + std::to_string(n), bytes);
  }
}

// Tensor tables as clients write them: the model's inputs, a scalar and an empty tensor, and
// one tensor of every dtype.
void TensorSeeds() {
  auto table = [](const char* name, std::vector<tensors::Entry> entries) {
    uint64_t offsets[tensors::kMaxTensors];
    char err[160];
    const uint64_t used = tensors::Plan(entries, offsets, err, sizeof err);
    std::vector<uint8_t> area(used, 0);
    tensors::Write(area.data(), entries, offsets, used);
    for (size_t i = tensors::TableBytes(static_cast<uint32_t>(entries.size())); i < used; ++i) {
      area[i] = static_cast<uint8_t>(i * 7);
    }
    Write("fuzz_tensors", name, area);
  };
  static const int64_t images[] = {2, 3, 8, 8}, ids[] = {5}, empty[] = {0, 4}, one[] = {1};
  table("model_inputs", {{"images", DType::kFloat32, images}, {"ids", DType::kInt64, ids}});
  table("scalar_and_empty", {{"s", DType::kFloat64, {}}, {"e", DType::kUInt8, empty}});
  std::vector<tensors::Entry> all;
  static const char* names[] = {"f32", "f64", "f16", "bf16", "i8", "u8", "i16", "i32", "i64", "b"};
  for (uint32_t d = 1; d <= 10; ++d) all.push_back({names[d - 1], static_cast<DType>(d), one});
  table("every_dtype", all);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (writes CORPUS_DIR/<target>/<seed>)\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  WireSeeds();
  DescriptorSeeds();
  AdmissionSeeds();
  AnalysisSeeds();
  TensorSeeds();
  return 0;
}
