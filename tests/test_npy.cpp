// The .npy reader/writer of `arch-bench conformance`: round trips, both header versions, and a
// clear error (naming the file and what was expected) for every kind of bad file.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/npy.hpp"
#include "runner/conformance/npy_files.hpp"
#include "support/cli.hpp"

namespace arch_bench {
namespace {
using testing::TempFolder;

NpyArray counting_array(std::vector<std::int64_t> shape, NpyDtype dtype) {
  NpyArray array;
  array.shape = std::move(shape);
  array.dtype = dtype;
  for (std::int64_t i = 0; i < array.size(); ++i) array.values.push_back(0.1 * static_cast<double>(i) - 1.7);
  return array;
}

// A header as NumPy writes it, before the 64-byte padding.
std::string npy_bytes(const std::string& dict, const std::string& data, int version = 1) {
  std::string header = dict;
  const std::size_t prelude = version == 1 ? 10 : 12;
  while ((prelude + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(version) + '\0';
  const std::size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (version != 1) out += std::string(2, '\0');
  return out + header + data;
}

std::string float_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

void expect_error(const std::string& bytes, const std::vector<std::string>& fragments) {
  try {
    parse_npy(bytes, "input/q.npy");
    FAIL() << "no error";
  } catch (const NpyError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("input/q.npy"), std::string::npos) << message;
    for (const std::string& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << message;
    }
  }
}

TEST(Npy, Float64RoundTripIsExact) {
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{}, {5}, {2, 3}, {2, 1, 4, 3}}) {
    const NpyArray array = counting_array(shape, NpyDtype::float64);
    const NpyArray back = parse_npy(encode_npy(array), "x.npy");
    EXPECT_EQ(back.shape, array.shape);
    EXPECT_EQ(back.dtype, NpyDtype::float64);
    EXPECT_EQ(back.values, array.values);
  }
}

TEST(Npy, Float32RoundTripRoundsToFloat) {
  const NpyArray array = counting_array({3, 4}, NpyDtype::float32);
  const NpyArray back = parse_npy(encode_npy(array), "x.npy");
  EXPECT_EQ(back.shape, array.shape);
  EXPECT_EQ(back.dtype, NpyDtype::float32);
  ASSERT_EQ(back.values.size(), array.values.size());
  for (std::size_t i = 0; i < array.values.size(); ++i) {
    EXPECT_EQ(back.values[i], static_cast<double>(static_cast<float>(array.values[i])));
  }
}

TEST(Npy, WritesVersion1And2HeadersThatAlignTheData) {
  const NpyArray array = counting_array({2, 3}, NpyDtype::float32);
  for (int version : {1, 2}) {
    const std::string bytes = encode_npy(array, version);
    EXPECT_EQ(bytes[6], static_cast<char>(version));
    EXPECT_EQ((bytes.size() - 6 * 4) % 64, 0u) << "data must start on a 64-byte boundary";
    const NpyArray back = parse_npy(bytes, "x.npy");
    EXPECT_EQ(back.shape, array.shape);
    EXPECT_EQ(back.values.size(), 6u);
  }
  // What NumPy writes for np.zeros((2, 3), '<f4'): a 118-byte 1.0 header, data at offset 128.
  const std::string bytes = encode_npy(NpyArray{{2, 3}, std::vector<double>(6, 0.0), NpyDtype::float32});
  EXPECT_EQ(bytes.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  EXPECT_EQ(bytes.substr(10, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(bytes.size(), 128u + 24u);
}

TEST(Npy, ReadsHeadersAsNumPyWritesThem) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  for (int version : {1, 2, 3}) {
    const NpyArray array =
        parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", float_bytes(values), version),
                  "x.npy");
    EXPECT_EQ(array.shape, (std::vector<std::int64_t>{3}));
    EXPECT_EQ(array.values, (std::vector<double>{1.5, -2.0, 3.25}));
  }
  // Key order, double quotes, no trailing comma and Python 2 longs are all valid headers.
  const NpyArray array =
      parse_npy(npy_bytes("{\"shape\": (1L, 3L), \"fortran_order\": False, \"descr\": \"<f4\"}", float_bytes(values)),
                "x.npy");
  EXPECT_EQ(array.shape, (std::vector<std::int64_t>{1, 3}));
}

TEST(Npy, RejectsTruncatedData) {
  const std::string bytes = encode_npy(counting_array({2, 3, 4}, NpyDtype::float32));
  expect_error(bytes.substr(0, bytes.size() - 4), {"truncated", "(2, 3, 4)", "96 bytes", "92"});
  expect_error(bytes.substr(0, 40), {"truncated"});
  expect_error(bytes.substr(0, 9), {"truncated"});
  expect_error(bytes.substr(0, 5), {"not a .npy file"});
}

TEST(Npy, RejectsTrailingData) {
  expect_error(encode_npy(counting_array({2}, NpyDtype::float64)) + "extra", {"5 bytes after the data"});
}

TEST(Npy, RejectsBadMagic) {
  std::string bytes = encode_npy(counting_array({2}, NpyDtype::float32));
  bytes[1] = 'X';
  expect_error(bytes, {"not a .npy file", "magic"});
  expect_error("q,k,v\n1,2,3\n", {"not a .npy file"});
}

TEST(Npy, RejectsUnsupportedVersion) {
  std::string bytes = encode_npy(counting_array({2}, NpyDtype::float32));
  bytes[6] = 4;
  expect_error(bytes, {"version 4.0"});
}

TEST(Npy, RejectsDtypesOtherThanLittleEndianF4AndF8) {
  const std::string data(16, '\0');
  const std::string dict = "{'descr': '%', 'fortran_order': False, 'shape': (2,), }";
  const auto with = [&](const std::string& descr) {
    std::string d = dict;
    d.replace(d.find('%'), 1, descr);
    return npy_bytes(d, data);
  };
  expect_error(with("<f2"), {"'<f2'", "float16", "'<f4'"});
  expect_error(with("|u1"), {"'|u1'", "not supported", "'<f4' (float32) or '<f8' (float64)"});
  expect_error(with(">f4"), {"'>f4'", "big-endian", "astype('<f4')"});
  expect_error(with(">f8"), {"big-endian", "astype('<f8')"});
  expect_error(with("<i8"), {"'<i8'", "not supported"});
  expect_error(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", data),
               {"structured dtype"});
}

TEST(Npy, RejectsFortranOrder) {
  expect_error(npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 1), }", std::string(16, '\0')),
               {"Fortran order", "ascontiguousarray"});
}

TEST(Npy, RejectsMalformedHeaders) {
  expect_error(npy_bytes("{'descr': '<f8', 'shape': (2,), }", std::string(16, '\0')), {"lacks"});
  expect_error(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': [2], }", std::string(16, '\0')),
               {"not a tuple"});
  expect_error(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", std::string(16, '\0')),
               {"not a valid .npy header"});
}

// The old message stopped at the dimension where the size overflowed: "(1048576, 1048576, 1048576)"
// for this four-dimensional shape.
TEST(Npy, TooLargeNamesTheWholeShape) {
  expect_error(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1048576, 1048576, 1048576, 7), }", ""),
               {"shape (1048576, 1048576, 1048576, 7) is too large"});
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1099511627776, 3), }", ""),
               {"shape (2, 1099511627776, 3) is too large"});
}

TEST(Npy, MissingFileAndFolderAreClearErrors) {
  TempFolder folder;
  try {
    read_npy(folder / "q.npy");
    FAIL() << "no error";
  } catch (const NpyError& error) {
    EXPECT_NE(std::string(error.what()).find("q.npy: cannot be read: no such file"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(read_npy(folder.path()), NpyError);
}

// Issue 8, defect 12: only regular files under the input cap are read.
TEST(Npy, DevicesAndFifosAreRefusedWithoutReading) {
  TempFolder folder;
  const auto fifo = folder / "q.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::filesystem::path& path : {fifo, std::filesystem::path("/dev/zero")}) {
    try {
      read_npy(path);
      FAIL() << "no error for " << path;
    } catch (const NpyError& error) {
      EXPECT_NE(std::string(error.what()).find(path.string() + ": is a"), std::string::npos) << error.what();
    }
  }
}

// Issue 8, defect 2: a header nesting '(' 65,000 deep overflowed the stack of the recursive parser.
TEST(Npy, DeeplyNestedHeadersAreRefused) {
  const std::string deep = "{'descr': '<f8', 'fortran_order': False, 'shape': " + std::string(65000, '(') + "}";
  expect_error(npy_bytes(deep, "", 2), {"not a valid .npy header", "nest more than 8 levels"});
  expect_error(npy_bytes("{'descr': " + std::string(65000, '[') + "}", "", 2), {"nest more than 8 levels"});
  // What NumPy writes stays readable: a shape tuple inside the dict.
  EXPECT_EQ(parse_npy(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }", std::string(16, '\0')),
                      "x.npy")
                .shape,
            (std::vector<std::int64_t>{1, 2}));
}

TEST(Npy, ConformanceOnADeeplyNestedHeaderIsExitTwo) {
  TempFolder folder;
  std::filesystem::create_directories(folder / "in");
  const std::string deep = "{'descr': '<f8', 'fortran_order': False, 'shape': " + std::string(65000, '(') + "}";
  for (const char* name : {"q.npy", "k.npy", "v.npy"}) {
    std::ofstream(folder / "in" / name, std::ios::binary) << npy_bytes(deep, "", 2);
  }
  const auto r = testing::run_cli("conformance --mechanism softmax_kv --inputs '" + (folder / "in").string() +
                                  "' --outputs '" + (folder / "out").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("nest more than 8 levels"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 2000u) << "the header is quoted whole";
}

TEST(Npy, WriteNeverReplacesAFileUnlessAsked) {
  TempFolder folder;
  const auto path = folder / "out.npy";
  write_npy(path, counting_array({2}, NpyDtype::float32), false);
  EXPECT_THROW(write_npy(path, counting_array({3}, NpyDtype::float32), false), UsageError);
  EXPECT_EQ(read_npy(path).shape, (std::vector<std::int64_t>{2}));
  write_npy(path, counting_array({3}, NpyDtype::float64), true);
  const NpyArray back = read_npy(path);
  EXPECT_EQ(back.shape, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(back.dtype, NpyDtype::float64);
}

}  // namespace
}  // namespace arch_bench
