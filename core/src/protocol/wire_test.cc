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
  // Layout of the tail: ... name, u64 max_in, u64 max_out, u8 has_device(=0), u8 has_timing(=0).
  ASSERT_GE(bytes.size(), 2u);
  ASSERT_EQ(bytes[bytes.size() - 2], 0);
  bytes[bytes.size() - 2] = 2;
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

}  // namespace
}  // namespace paam::wire
