// The tensor table (written by clients, read by the model plugin: untrusted) and signatures.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tensors/signature.h"
#include "tensors/tensor_table.h"

namespace paam::tensors {
namespace {

// A table of `entries` written into a fresh area, data bytes left zero.
std::vector<uint8_t> Area(std::vector<Entry> entries, uint64_t* used_out = nullptr) {
  uint64_t offsets[kMaxTensors];
  char err[256];
  const uint64_t used = Plan(entries, offsets, err, sizeof err);
  EXPECT_NE(used, 0u) << err;
  std::vector<uint8_t> area(used + 64, 0);
  Write(area.data(), entries, offsets, used);
  if (used_out != nullptr) *used_out = used;
  return area;
}

const int64_t kImage[] = {2, 3, 4, 4};
const int64_t kIds[] = {5};

std::vector<Entry> TwoTensors() { return {{"images", DType::kFloat32, kImage}, {"ids", DType::kInt64, kIds}}; }

WireEntry* EntryOf(std::vector<uint8_t>& area, int i) {
  return reinterpret_cast<WireEntry*>(area.data() + kHeaderBytes + i * kEntryBytes);
}
WireHeader* HeaderOf(std::vector<uint8_t>& area) { return reinterpret_cast<WireHeader*>(area.data()); }

std::string DecodeError(std::vector<uint8_t>& area, uint64_t bytes) {
  Table t;
  char err[256] = "";
  EXPECT_FALSE(Decode(area.data(), bytes, &t, err, sizeof err));
  return err;
}

TEST(TensorTable, WrittenTablesDecodeWithAlignedOffsetsAfterTheTable) {
  uint64_t used = 0;
  auto area = Area(TwoTensors(), &used);
  Table t;
  char err[256];
  ASSERT_TRUE(Decode(area.data(), used, &t, err, sizeof err)) << err;
  ASSERT_EQ(t.count, 2u);
  EXPECT_STREQ(t.tensors[0].name, "images");
  EXPECT_EQ(t.tensors[0].dtype, DType::kFloat32);
  EXPECT_EQ(t.tensors[0].ndim, 4u);
  EXPECT_EQ(t.tensors[0].shape[3], 4);
  EXPECT_EQ(t.tensors[0].bytes, 2u * 3 * 4 * 4 * 4);
  EXPECT_EQ(t.tensors[0].offset, TableBytes(2));
  EXPECT_EQ(t.tensors[1].offset % kAlign, 0u);
  EXPECT_GE(t.tensors[1].offset, t.tensors[0].offset + t.tensors[0].bytes);
  EXPECT_EQ(used, t.tensors[1].offset + 5 * 8);
  EXPECT_NE(t.Find("ids"), nullptr);
  EXPECT_EQ(t.Find("nope"), nullptr);
}

TEST(TensorTable, ScalarsAndEmptyTensorsAreValid) {
  const int64_t empty[] = {0, 3};
  uint64_t used = 0;
  auto area = Area({{"scale", DType::kFloat64, {}}, {"none", DType::kUInt8, empty}}, &used);
  Table t;
  char err[256];
  ASSERT_TRUE(Decode(area.data(), used, &t, err, sizeof err)) << err;
  EXPECT_EQ(t.tensors[0].bytes, 8u);
  EXPECT_EQ(t.tensors[1].bytes, 0u);
}

TEST(TensorTable, MalformedHeadersAreRefusedWithTheReason) {
  uint64_t used = 0;
  auto area = Area(TwoTensors(), &used);
  EXPECT_NE(DecodeError(area, 10).find("no tensor table"), std::string::npos);
  auto a = area;
  HeaderOf(a)->magic = 0x12345678;
  EXPECT_NE(DecodeError(a, used).find("magic"), std::string::npos);
  a = area;
  HeaderOf(a)->version = 9;
  EXPECT_NE(DecodeError(a, used).find("version 9"), std::string::npos);
  a = area;
  HeaderOf(a)->entry_bytes = 64;
  EXPECT_NE(DecodeError(a, used).find("sizes"), std::string::npos);
  a = area;
  HeaderOf(a)->count = 65;
  EXPECT_NE(DecodeError(a, used).find("at most 64"), std::string::npos);
  a = area;
  HeaderOf(a)->count = 40;  // the entries would run past the input
  EXPECT_NE(DecodeError(a, used).find("needs"), std::string::npos);
  a = area;
  HeaderOf(a)->used_bytes = used + 1;  // more than was written
  EXPECT_NE(DecodeError(a, used).find("used"), std::string::npos);
  a = area;
  HeaderOf(a)->used_bytes = 10;  // inside the table
  EXPECT_NE(DecodeError(a, used).find("used"), std::string::npos);
}

TEST(TensorTable, MalformedEntriesAreRefusedNamingTheTensor) {
  uint64_t used = 0;
  auto area = Area(TwoTensors(), &used);
  auto a = area;
  std::memset(EntryOf(a, 0)->name, 'x', kNameBytes);  // no NUL
  EXPECT_NE(DecodeError(a, used).find("invalid name"), std::string::npos);
  a = area;
  std::strcpy(EntryOf(a, 0)->name, "bad name");
  EXPECT_NE(DecodeError(a, used).find("invalid name"), std::string::npos);
  a = area;
  std::strcpy(EntryOf(a, 1)->name, "images");
  EXPECT_NE(DecodeError(a, used).find("twice"), std::string::npos);
  a = area;
  EntryOf(a, 1)->dtype = 99;
  EXPECT_NE(DecodeError(a, used).find("'ids': unknown dtype code 99"), std::string::npos);
  a = area;
  EntryOf(a, 1)->ndim = 9;
  EXPECT_NE(DecodeError(a, used).find("9 dimensions"), std::string::npos);
  a = area;
  EntryOf(a, 1)->shape[0] = -5;
  EXPECT_NE(DecodeError(a, used).find("negative"), std::string::npos);
  a = area;  // a shape whose byte size wraps around 2^64
  EntryOf(a, 0)->shape[0] = INT64_MAX;
  EntryOf(a, 0)->shape[1] = INT64_MAX;
  EXPECT_NE(DecodeError(a, used).find("overflows"), std::string::npos);
  a = area;
  EntryOf(a, 1)->bytes = 8;
  EXPECT_NE(DecodeError(a, used).find("int64[5] is 40 bytes, the table says 8"), std::string::npos);
  a = area;
  EntryOf(a, 1)->offset += 8;
  EXPECT_NE(DecodeError(a, used).find("aligned"), std::string::npos);
  a = area;
  EntryOf(a, 1)->offset = 64;  // inside the table
  EXPECT_NE(DecodeError(a, used).find("outside"), std::string::npos);
  a = area;
  EntryOf(a, 1)->offset = UINT64_MAX - 63;  // offset + bytes wraps
  EXPECT_NE(DecodeError(a, used).find("outside"), std::string::npos);
  a = area;  // a tensor past the bytes the request says it wrote
  EXPECT_NE(DecodeError(a, used - 1).find("used"), std::string::npos);
}

TEST(TensorTable, PlanRefusesWhatCannotBeWritten) {
  uint64_t offsets[kMaxTensors];
  char err[256];
  const int64_t negative[] = {-1};
  std::vector<Entry> bad_name = {{"no spaces", DType::kFloat32, kIds}};
  EXPECT_EQ(Plan(bad_name, offsets, err, sizeof err), 0u);
  EXPECT_NE(std::string(err).find("invalid"), std::string::npos);
  std::vector<Entry> twice = {{"a", DType::kFloat32, kIds}, {"a", DType::kFloat32, kIds}};
  EXPECT_EQ(Plan(twice, offsets, err, sizeof err), 0u);
  std::vector<Entry> neg = {{"a", DType::kFloat32, negative}};
  EXPECT_EQ(Plan(neg, offsets, err, sizeof err), 0u);
  std::vector<Entry> many(kMaxTensors + 1, Entry{"a", DType::kFloat32, kIds});
  EXPECT_EQ(Plan(many, offsets, err, sizeof err), 0u);
}

Signature Sig(const std::string& text) {
  auto s = ParseSignature(text, "test");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? s.value() : Signature{};
}

const char* kSig = R"({"inputs": [{"name": "images", "dtype": "float32", "shape": [-1, 3, 4, 4], "max_shape": [2, 3, 4, 4]},
                                  {"name": "ids", "dtype": "int64", "shape": [5]}],
                       "outputs": [{"name": "logits", "dtype": "float32", "shape": [-1, 10], "max_shape": [2, 10]}]})";

TEST(Signature, ParsesAndComputesTheLargestAreas) {
  Signature s = Sig(kSig);
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].max_shape[0], 2);
  EXPECT_EQ(MaxAreaBytes(s.inputs), AlignUp(TableBytes(2) + 2 * 3 * 4 * 4 * 4) + 5 * 8);
  EXPECT_EQ(MaxAreaBytes(s.outputs), TableBytes(1) + 2 * 10 * 4);
  Signature unbounded = Sig(R"({"inputs": [{"name": "x", "dtype": "uint8", "shape": [-1]}], "outputs": []})");
  EXPECT_EQ(MaxAreaBytes(unbounded.inputs), 0u);
  // round trip
  Signature again = Sig(SignatureJson(s));
  EXPECT_EQ(again.inputs[1].name, "ids");
  EXPECT_EQ(again.outputs[0].max_shape, s.outputs[0].max_shape);
}

TEST(Signature, RefusesMalformedSignaturesSayingWhere) {
  auto bad = [](const std::string& text) {
    auto s = ParseSignature(text, "m.pt.json");
    EXPECT_FALSE(s.ok()) << text;
    return s.ok() ? std::string() : s.status().message();
  };
  EXPECT_NE(bad("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(bad(R"({"outputs": []})").find("'inputs' is missing"), std::string::npos);
  EXPECT_NE(bad(R"({"inputs": [{"name": "x", "dtype": "float128", "shape": [1]}], "outputs": []})").find("dtype"),
            std::string::npos);
  EXPECT_NE(bad(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [-2]}], "outputs": []})").find(">= -1"),
            std::string::npos);
  EXPECT_NE(bad(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1,1,1,1,1,1,1,1,1]}], "outputs": []})")
                .find("at most 8"),
            std::string::npos);
  EXPECT_NE(bad(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2], "max_shape": [3]}], "outputs": []})")
                .find("max_shape"),
            std::string::npos);
  EXPECT_NE(bad(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1]}, {"name": "x", "dtype": "float32", "shape": [1]}], "outputs": []})")
                .find("input 'x' is listed twice"),
            std::string::npos);
}

std::string MatchError(const Signature& s, std::vector<Entry> entries) {
  uint64_t used = 0;
  auto area = Area(std::move(entries), &used);
  Table t;
  char err[256] = "";
  EXPECT_TRUE(Decode(area.data(), used, &t, err, sizeof err)) << err;
  EXPECT_FALSE(MatchInputs("det", s.inputs, t, err, sizeof err));
  return err;
}

TEST(Signature, InputsAreCheckedWithMessagesThatNameTheExpectation) {
  Signature s = Sig(kSig);
  uint64_t used = 0;
  const int64_t one[] = {1, 3, 4, 4};
  auto area = Area({{"ids", DType::kInt64, kIds}, {"images", DType::kFloat32, one}}, &used);  // any order
  Table t;
  char err[256];
  ASSERT_TRUE(Decode(area.data(), used, &t, err, sizeof err));
  EXPECT_TRUE(MatchInputs("det", s.inputs, t, err, sizeof err)) << err;

  EXPECT_EQ(MatchError(s, {{"images", DType::kFloat64, one}, {"ids", DType::kInt64, kIds}}),
            "model 'det': input 'images' must be float32[-1,3,4,4] (max [2,3,4,4]), got float64[1,3,4,4]");
  const int64_t three[] = {3, 3, 4, 4};  // beyond max_shape
  EXPECT_EQ(MatchError(s, {{"images", DType::kFloat32, three}, {"ids", DType::kInt64, kIds}}),
            "model 'det': input 'images' must be float32[-1,3,4,4] (max [2,3,4,4]), got float32[3,3,4,4]");
  const int64_t flat[] = {48};
  EXPECT_EQ(MatchError(s, {{"images", DType::kFloat32, flat}, {"ids", DType::kInt64, kIds}}),
            "model 'det': input 'images' must be float32[-1,3,4,4] (max [2,3,4,4]), got float32[48]");
  EXPECT_EQ(MatchError(s, {{"images", DType::kFloat32, one}}),
            "model 'det' needs input 'ids' (int64[5]), which the request lacks");
  EXPECT_EQ(MatchError(s, {{"images", DType::kFloat32, one}, {"ids", DType::kInt64, kIds}, {"extra", DType::kUInt8, kIds}}),
            "model 'det' has no input 'extra' (its inputs: images ids)");
}

TEST(Signature, OutputsBeyondTheSignatureAreNamed) {
  Signature s = Sig(kSig);
  char err[256];
  const int64_t ok[] = {2, 10}, big[] = {4, 10}, wrong[] = {2, 11};
  EXPECT_TRUE(MatchOutput("det", s.outputs[0], DType::kFloat32, ok, err, sizeof err));
  EXPECT_FALSE(MatchOutput("det", s.outputs[0], DType::kFloat32, big, err, sizeof err));
  EXPECT_STREQ(err, "model 'det': output 'logits' is float32[4,10], its signature says float32[-1,10] (max [2,10])");
  EXPECT_FALSE(MatchOutput("det", s.outputs[0], DType::kFloat32, wrong, err, sizeof err));
  EXPECT_FALSE(MatchOutput("det", s.outputs[0], DType::kInt32, ok, err, sizeof err));
}

TEST(Signature, ModelsRepliesParse) {
  auto models = ParseModels(R"({"models": [{"name": "det", "format": "torchscript", "path": "/m.pt", "device": "cpu",
      "inputs": [{"name": "x", "dtype": "uint8", "shape": [3]}], "outputs": [], "max_input_bytes": 256,
      "max_output_bytes": 64}]})");
  ASSERT_TRUE(models.ok()) << models.status().message();
  ASSERT_EQ(models->size(), 1u);
  EXPECT_EQ((*models)[0].format, "torchscript");
  EXPECT_EQ((*models)[0].max_input_bytes, 256u);
  EXPECT_EQ((*models)[0].inputs[0].dtype, DType::kUInt8);
  EXPECT_FALSE(ParseModels("[]").ok());
}

TEST(DTypes, NamesAndSizes) {
  EXPECT_EQ(ParseDType("bfloat16"), DType::kBFloat16);
  EXPECT_EQ(DTypeSize(DType::kInt16), 2u);
  EXPECT_EQ(DTypeName(static_cast<DType>(77)), "?");
  EXPECT_EQ(DTypeSize(static_cast<DType>(77)), 0u);
  EXPECT_FALSE(ParseDType("float"));
}

}  // namespace
}  // namespace paam::tensors
