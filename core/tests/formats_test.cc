// The one reader of TVM's binary formats (core/src/formats): each kind of failure has one
// message form and is a ValueError, whatever format it is met in.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "formats/byte_reader.h"
#include "formats/module_tree.h"
#include "formats/ndarray_record.h"
#include "formats/params_blob.h"
#include "polyffi/error.h"

namespace polyffi {
namespace formats {
namespace {

// "Kind: message" of what f throws ("" when it throws nothing).
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.Full();
  }
  return "";
}

std::string Record(std::vector<int64_t> shape, const std::vector<float>& data) {
  DLTensor t{};
  t.data = const_cast<float*>(data.data());
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(shape.size());
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape.data();
  std::string out;
  WriteNDArrayRecord(t, data.size() * sizeof(float), &out);
  return out;
}

template <typename T>
void Poke(std::string* s, size_t at, T v) {
  std::memcpy(&(*s)[at], &v, sizeof(v));
}

// Offsets in a record: magic 0, reserved 8, device 16, ndim 24, dtype 28, shape 32.
constexpr size_t kDevice = 16, kNDim = 24, kShape = 32;

NDArrayRecord Parse(const std::string& bytes) {
  ByteReader r(bytes.data(), bytes.size(), "test", "record");
  NDArrayRecord rec = ReadNDArrayRecord(&r, "array 'w'");
  r.ExpectEnd("the array");
  return rec;
}

TEST(FormatsTest, ARecordRoundTrips) {
  std::vector<float> data{1, 2, 3, 4, 5, 6};
  std::string bytes = Record({2, 3}, data);
  NDArrayRecord rec = Parse(bytes);
  EXPECT_EQ(rec.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(rec.dtype.code, kDLFloat);
  EXPECT_EQ(rec.dtype.bits, 32);
  ASSERT_EQ(rec.nbytes, 24u);
  EXPECT_EQ(std::memcmp(rec.data, data.data(), 24), 0);
}

TEST(FormatsTest, EachFailureHasItsMessage) {
  const std::string good = Record({2}, {1, 2});
  EXPECT_EQ(ErrorOf([&] { Parse(good.substr(0, 30)); }),
            "ValueError: test: record truncated reading an array's dtype at offset 30 (need 2 "
            "bytes, 0 left)");
  std::string bad = good;
  bad[0] ^= 1;
  EXPECT_EQ(ErrorOf([&] { Parse(bad); }),
            "ValueError: test: array 'w' does not start with the NDArray magic");
  bad = good;
  Poke<int32_t>(&bad, kNDim, 33);
  EXPECT_EQ(ErrorOf([&] { Parse(bad); }), "ValueError: test: array 'w' has ndim 33 (at most 32)");
  bad = good;
  Poke<int32_t>(&bad, kDevice, kDLCUDA);
  EXPECT_EQ(ErrorOf([&] { Parse(bad); }),
            "ValueError: test: array 'w' is stored from device type 2; only CPU arrays can be "
            "loaded");
  bad = good;
  Poke<int64_t>(&bad, kShape, -1);
  EXPECT_EQ(ErrorOf([&] { Parse(bad); }),
            "ValueError: test: array 'w' has a negative dimension -1");
  bad = good;
  Poke<int64_t>(&bad, kShape, int64_t{1} << 62);
  EXPECT_EQ(ErrorOf([&] { Parse(bad); }),
            "ValueError: test: array 'w' has shape [4611686018427387904], whose byte size "
            "overflows");
  bad = good;
  Poke<int64_t>(&bad, kShape, 3);
  EXPECT_EQ(ErrorOf([&] { Parse(bad); }),
            "ValueError: test: array 'w' announces 8 bytes but its shape [3] float32 needs 12");
  EXPECT_EQ(ErrorOf([&] { Parse(good + "xy"); }),
            "ValueError: test: 2 unexpected trailing bytes after the array");
}

TEST(FormatsTest, ACountMustFitInTheBytesLeft) {
  std::string bytes(16, '\0');
  Poke<uint64_t>(&bytes, 0, 2);  // two u64 items need 16 bytes; 8 are left
  ByteReader r(bytes.data(), bytes.size(), "", "blob");
  EXPECT_EQ(ErrorOf([&] { r.U64Vector("the items"); }),
            "ValueError: blob truncated: the items at offset 0 announces 2 entries but only 8 "
            "bytes are left");
}

TEST(FormatsTest, AStreamReadsThroughItsPull) {
  std::string source = Record({1}, {7});
  size_t at = 0;
  ByteReader r(
      [&](uint64_t n, const char*) {
        std::string chunk = source.substr(at, n);
        at += chunk.size();
        return chunk;
      },
      "stream", "section");
  NDArrayRecord rec = ReadNDArrayRecord(&r, "array 'x'");
  float v;
  std::memcpy(&v, rec.data, sizeof(v));
  EXPECT_EQ(v, 7.0f);
  EXPECT_EQ(ErrorOf([&] { r.Read<uint64_t>("more"); }), "ValueError: stream: no bytes for more");
}

TEST(FormatsTest, ParamsBlobsRoundTripAndRefuseMismatches) {
  std::string blob;
  WriteParamsHeader({"a", "b"}, &blob);
  blob += Record({1}, {1}) + Record({2}, {2, 3});
  ParamsBlob p = ReadParamsBlob(blob.data(), blob.size(), "load");
  ASSERT_EQ(p.names, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(p.arrays.size(), 2u);
  EXPECT_EQ(p.arrays[1].shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(ReadParamsBlob(blob.data(), 50, "load", true).names.size(), 2u);  // names only
  std::string bad = blob;
  Poke<uint64_t>(&bad, 8 * 3 + 9 + 9, 3);  // the array count
  EXPECT_EQ(ErrorOf([&] { ReadParamsBlob(bad.data(), bad.size(), "load"); }),
            "ValueError: load: params blob has 2 names but 3 arrays");
  EXPECT_EQ(ErrorOf([&] { ReadParamsBlob("garbage!", 8, "load"); }),
            "ValueError: load: not a TVM params blob: magic 0x2165676162726167, expected "
            "0xf7e58d4f05049cb7");
}

TEST(FormatsTest, ImportTreesAreChecked) {
  ByteReader r("", 0, "lib.so", "blob");
  EXPECT_EQ(ErrorOf([&] {
              CheckImportTree({0, 1, 2}, {1, 0}, 2, r);
            }),
            "ValueError: lib.so: the blob's import tree has a cycle through module 0");
  EXPECT_EQ(ErrorOf([&] {
              CheckImportTree({0, 1, 1}, {5}, 2, r);
            }),
            "ValueError: lib.so: blob imports module 5 of 2");
  EXPECT_EQ(ErrorOf([&] {
              CheckImportTree({0, 1, 1}, {}, 2, r);
            }),
            "ValueError: lib.so: blob's import tree does not match its 2 modules and 0 child "
            "indices");
  EXPECT_EQ(ErrorOf([&] { CheckImportTree({0}, {}, 0, r); }),
            "ValueError: lib.so: blob has no modules");
  EXPECT_EQ(ErrorOf([&] { CheckImportTree({0, 1, 1}, {1}, 2, r); }), "");
}

}  // namespace
}  // namespace formats
}  // namespace polyffi
