// protocol/wire_test.cc — registration messages: round trips (device buffers included) and
// rejection of malformed bytes.
#include "protocol/wire.h"

#include <gtest/gtest.h>

#include <cstring>

#include "shm/layout.h"

namespace paam::wire {
namespace {

DeviceBuffers SampleBuffers(uint8_t seed) {
  DeviceBuffers d;
  for (size_t i = 0; i < kIpcHandleBytes; ++i) {
    d.input_handle[i] = static_cast<uint8_t>(seed + i);
    d.output_handle[i] = static_cast<uint8_t>(255 - seed - i);
  }
  d.input_offset = 512;
  d.input_bytes = (1ull << 33) + 8;  // more than 32 bits survive
  d.output_offset = 0;
  d.output_bytes = 4096;
  d.gpu = 3;
  return d;
}

RegisterRequest Sample() {
  RegisterRequest m;
  m.version = shm::kProtocolVersion;
  m.chain_priority = 42;
  m.callback_uuid[0] = 7;
  m.wait = WaitMode::kHybrid;
  m.unit = 1;
  m.client_name = "ipc-test";
  m.kernels.push_back({"vector_add", 1024, 512, SampleBuffers(9)});
  m.kernels.push_back({"spin", 0, 8, std::nullopt});
  m.kernels.push_back({"reduction", 64, 8, SampleBuffers(100)});
  TimingModel t;
  t.chain = "c";
  t.period_ms = 10;
  t.segments_ms = {1.5};
  m.timing = t;
  m.deadline_ms = 12.5;
  return m;
}

void ExpectSameBuffers(const DeviceBuffers& a, const DeviceBuffers& b) {
  EXPECT_EQ(a.input_handle, b.input_handle);
  EXPECT_EQ(a.input_offset, b.input_offset);
  EXPECT_EQ(a.input_bytes, b.input_bytes);
  EXPECT_EQ(a.output_handle, b.output_handle);
  EXPECT_EQ(a.output_offset, b.output_offset);
  EXPECT_EQ(a.output_bytes, b.output_bytes);
  EXPECT_EQ(a.gpu, b.gpu);
}

TEST(Wire, RegisterRequestRoundTripKeepsDeviceBuffersPerKernel) {
  const RegisterRequest m = Sample();
  const std::vector<uint8_t> bytes = Encode(m);
  auto d = DecodeRegisterRequest(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->kernels.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d->kernels[i].name, m.kernels[i].name);
    EXPECT_EQ(d->kernels[i].max_input_bytes, m.kernels[i].max_input_bytes);
    EXPECT_EQ(d->kernels[i].max_output_bytes, m.kernels[i].max_output_bytes);
    ASSERT_EQ(d->kernels[i].device.has_value(), m.kernels[i].device.has_value()) << i;
    if (m.kernels[i].device) ExpectSameBuffers(*d->kernels[i].device, *m.kernels[i].device);
  }
  EXPECT_EQ(d->chain_priority, 42u);
  EXPECT_EQ(d->unit, 1);
  ASSERT_TRUE(d->timing.has_value());
  EXPECT_EQ(d->timing->segments_ms, std::vector<double>{1.5});
  EXPECT_EQ(d->deadline_ms, 12.5);
  EXPECT_EQ(Encode(d.value()), bytes) << "re-encoding gives the same bytes";
}

TEST(Wire, TruncatedOrPaddedDeviceBuffersAreMalformed) {
  const std::vector<uint8_t> bytes = Encode(Sample());
  // Every strict prefix fails (never reads past the end), and so does trailing garbage.
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto d = DecodeRegisterRequest(bytes.data(), n);
    EXPECT_FALSE(d.ok()) << "prefix of " << n << " bytes";
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(DecodeRegisterRequest(longer.data(), longer.size()).status().code(), Errc::kProtocolError);
}

TEST(Wire, DeviceBuffersFlagOtherThanZeroOrOneIsMalformed) {
  RegisterRequest m;
  m.version = shm::kProtocolVersion;
  m.kernels.push_back({"spin", 0, 8, std::nullopt});
  std::vector<uint8_t> bytes = Encode(m);
  // Layout of the tail: ... name, u64 max_in, u64 max_out, u8 has_device(=0), u8 has_timing(=0),
  // f64 deadline_ms.
  const size_t has_device = bytes.size() - 2 - sizeof(double);
  ASSERT_GE(bytes.size(), 2u + sizeof(double));
  ASSERT_EQ(bytes[has_device], 0);
  bytes[has_device] = 2;
  auto d = DecodeRegisterRequest(bytes.data(), bytes.size());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Errc::kProtocolError);
  EXPECT_NE(d.status().message().find("device buffers"), std::string::npos) << d.status().message();
}

TEST(Wire, ProtocolVersionWasBumpedForDeviceBuffersAndOldClientsAreRefused) {
  EXPECT_GE(shm::kProtocolVersion, 2u);
  RegisterRequest m = Sample();
  std::vector<uint8_t> bytes = Encode(m);
  const uint32_t old = 1;
  std::memcpy(bytes.data() + 8, &old, 4);  // magic, kind, version
  auto d = DecodeRegisterRequest(bytes.data(), bytes.size());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Errc::kVersionMismatch);
}

TEST(Wire, ControlRequestsRoundTripWithTheirOwnFields) {
  for (MessageKind kind : {MessageKind::kStats, MessageKind::kTraceStart, MessageKind::kTraceRead,
                           MessageKind::kTraceStop}) {
    ControlRequest m;
    m.kind = kind;
    m.offset = kind == MessageKind::kStats ? (1ull << 40) + 3 : 0;
    m.capacity = kind == MessageKind::kTraceStart ? 12345 : 0;
    const std::vector<uint8_t> bytes = Encode(m);
    EXPECT_EQ(PeekKind(bytes.data(), bytes.size()), kind);
    EXPECT_TRUE(IsControlRequest(kind));
    auto d = DecodeControlRequest(bytes.data(), bytes.size());
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->kind, kind);
    EXPECT_EQ(d->offset, m.offset);
    EXPECT_EQ(d->capacity, m.capacity);
    std::vector<uint8_t> longer = bytes;
    longer.push_back(0);
    EXPECT_EQ(DecodeControlRequest(longer.data(), longer.size()).status().code(), Errc::kProtocolError);
  }
  EXPECT_FALSE(IsControlRequest(MessageKind::kRegister));
  const std::vector<uint8_t> reg = Encode(Sample());
  EXPECT_FALSE(DecodeControlRequest(reg.data(), reg.size()).ok());
}

TEST(Wire, ControlReplyRoundTripsAndBoundsItsPayload) {
  ControlReply m;
  m.kind = MessageKind::kTraceReply;
  m.status = Errc::kBusy;
  m.message = "busy";
  m.total = 7;
  m.offset = 3;
  m.more = true;
  m.payload = "{\"records\": []}";
  std::vector<uint8_t> bytes = Encode(m);
  auto d = DecodeControlReply(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->kind, m.kind);
  EXPECT_EQ(d->status, m.status);
  EXPECT_EQ(d->message, m.message);
  EXPECT_EQ(d->total, m.total);
  EXPECT_EQ(d->offset, m.offset);
  EXPECT_TRUE(d->more);
  EXPECT_EQ(d->payload, m.payload);
  m.payload.assign(kMaxControlPayload + 1, 'x');
  bytes = Encode(m);
  EXPECT_EQ(DecodeControlReply(bytes.data(), bytes.size()).status().code(), Errc::kProtocolError);
  m.payload.assign(kMaxControlPayload, 'x');
  bytes = Encode(m);
  EXPECT_LE(bytes.size(), kMaxMessageBytes);  // a full chunk fits one message
  EXPECT_TRUE(DecodeControlReply(bytes.data(), bytes.size()).ok());
  m.kind = MessageKind::kStats;  // a request kind is not a reply
  bytes = Encode(m);
  EXPECT_FALSE(DecodeControlReply(bytes.data(), bytes.size()).ok());
}

TEST(Wire, PeekKindKnowsTheControlKindsAndNoMore) {
  for (uint32_t kind = 1; kind <= 13; ++kind) {
    uint8_t bytes[12];
    std::memcpy(bytes, &kMagic, 4);
    std::memcpy(bytes + 4, &kind, 4);
    std::memcpy(bytes + 8, &shm::kProtocolVersion, 4);
    EXPECT_EQ(PeekKind(bytes, sizeof bytes).has_value(), kind <= 12) << kind;
  }
}

TEST(Wire, ModelsRequestsCarryAnOffsetAndAreNoControlRequest) {
  ControlRequest req;
  req.kind = MessageKind::kModels;
  req.offset = 61440;
  auto bytes = Encode(req);
  EXPECT_FALSE(IsControlRequest(MessageKind::kModels));  // the registry answers it
  auto offset = DecodeModelsRequest(bytes.data(), bytes.size());
  ASSERT_TRUE(offset.ok()) << offset.status().ToString();
  EXPECT_EQ(*offset, 61440u);
  bytes.push_back(0);  // trailing garbage
  EXPECT_FALSE(DecodeModelsRequest(bytes.data(), bytes.size()).ok());
  req.kind = MessageKind::kStats;
  bytes = Encode(req);
  EXPECT_FALSE(DecodeModelsRequest(bytes.data(), bytes.size()).ok());
  ControlReply reply;
  reply.kind = MessageKind::kModelsReply;
  reply.payload = "{\"models\": []}";
  bytes = Encode(reply);
  auto back = DecodeControlReply(bytes.data(), bytes.size());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->kind, MessageKind::kModelsReply);
}

}  // namespace
}  // namespace paam::wire
