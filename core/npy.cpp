#include "core/npy.hpp"

#include <bit>
#include <cctype>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace arch_bench {

// The data bytes are copied as they are: a big-endian host would need a byte swap here.
static_assert(std::endian::native == std::endian::little, "the .npy codec assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
// No conformance tensor comes near this; it keeps shape products far from int64 overflow.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
// A header NumPy writes nests one level (the shape tuple); the parser below recurses per level, so a
// hostile header of 65,000 '(' would overflow the stack without a bound.
constexpr int kMaxHeaderDepth = 8;

// Header text quoted in a message: a hostile header can be megabytes long, so only its start.
std::string clipped(const std::string& text) {
  constexpr std::size_t kQuoted = 200;
  return text.size() <= kQuoted ? text : text.substr(0, kQuoted) + "...";
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
// This parses the subset of Python literals such a header can hold.
struct PyValue {
  enum class Kind { string, boolean, integer, tuple, list, none } kind = Kind::none;
  std::string text;               // string
  bool flag = false;              // boolean
  std::int64_t number = 0;        // integer
  std::vector<PyValue> items;     // tuple, list
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : text_(text), name_(name) {}

  // The dict's entries, in order.
  std::vector<std::pair<std::string, PyValue>> dict() {
    skip_space();
    expect('{');
    std::vector<std::pair<std::string, PyValue>> entries;
    while (true) {
      skip_space();
      if (peek() == '}') break;
      PyValue key = value();
      if (key.kind != PyValue::Kind::string) fail("a dict key is not a string");
      skip_space();
      expect(':');
      entries.emplace_back(key.text, value());
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') fail("expected ',' or '}'");
    }
    ++pos_;
    return entries;
  }

 private:
  PyValue value(int depth = 0) {
    skip_space();
    const char c = peek();
    PyValue v;
    if (c == '\'' || c == '"') {
      ++pos_;
      v.kind = PyValue::Kind::string;
      while (peek() != c) {
        if (peek() == '\\') ++pos_;
        v.text += next();
      }
      ++pos_;
    } else if (c == '(' || c == '[') {
      if (depth >= kMaxHeaderDepth) fail(fmt::format("tuples and lists nest more than {} levels deep", kMaxHeaderDepth));
      const char close = c == '(' ? ')' : ']';
      ++pos_;
      v.kind = c == '(' ? PyValue::Kind::tuple : PyValue::Kind::list;
      while (true) {
        skip_space();
        if (peek() == close) break;
        v.items.push_back(value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
        } else if (peek() != close) {
          fail(fmt::format("expected ',' or '{}'", close));
        }
      }
      ++pos_;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      v.kind = PyValue::Kind::integer;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v.number > kMaxElements) fail("a shape entry is too large");
        v.number = v.number * 10 + (next() - '0');
      }
      if (peek() == 'L') ++pos_;  // Python 2 long
    } else if (word("True")) {
      v.kind = PyValue::Kind::boolean;
      v.flag = true;
    } else if (word("False")) {
      v.kind = PyValue::Kind::boolean;
    } else if (word("None")) {
      v.kind = PyValue::Kind::none;
    } else {
      fail(fmt::format("unexpected character '{}'", c));
    }
    return v;
  }

  bool word(const char* w) {
    const std::size_t n = std::strlen(w);
    if (text_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() const {
    if (pos_ >= text_.size()) fail("the header ends early");
    return text_[pos_];
  }
  char next() {
    const char c = peek();
    ++pos_;
    return c;
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw NpyError(fmt::format("{}: not a valid .npy header ({} at offset {} of '{}')", name_, what, pos_,
                               clipped(text_)));
  }

  const std::string& text_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

NpyDtype parse_descr(const PyValue& descr, const std::string& name) {
  constexpr const char* kExpected = "expected '<f4' (float32) or '<f8' (float64), little-endian";
  if (descr.kind != PyValue::Kind::string) {
    throw NpyError(fmt::format("{}: has a structured dtype; {}: save a plain numeric array", name, kExpected));
  }
  const std::string& d = descr.text;
  if (d == "<f4") return NpyDtype::float32;
  if (d == "<f8") return NpyDtype::float64;
  if (d == ">f4" || d == ">f8") {
    throw NpyError(fmt::format("{}: dtype '{}' is big-endian; {} (convert with a.astype('<{}'))", name, d,
                               kExpected, d.substr(1)));
  }
  if (d == "<f2" || d == "|f2") {
    throw NpyError(fmt::format("{}: dtype '{}' (float16) is not supported; {} (convert with a.astype('<f4'))",
                               name, d, kExpected));
  }
  throw NpyError(fmt::format("{}: dtype '{}' is not supported; {} (convert with a.astype('<f4'))", name,
                             clipped(d), kExpected));
}

std::uint32_t little_endian(const std::string& bytes, std::size_t offset, std::size_t width) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i) {
    value |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return value;
}

}  // namespace

std::string npy_descr(NpyDtype dtype) { return dtype == NpyDtype::float32 ? "<f4" : "<f8"; }

std::int64_t NpyArray::size() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

NpyArray parse_npy(const std::string& bytes, const std::string& name) {
  if (bytes.size() < kMagicBytes + 2 || bytes.compare(0, kMagicBytes, kMagic, kMagicBytes) != 0) {
    throw NpyError(fmt::format("{}: not a .npy file (it does not start with the magic \\x93NUMPY); write it "
                               "with numpy.save",
                               name));
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    throw NpyError(fmt::format("{}: .npy format version {}.{} is not supported (1.0, 2.0 or 3.0 are)", name,
                               major, minor));
  }
  // 1.0: a 2-byte header length; 2.0 and 3.0 (3.0 only allows a UTF-8 header): 4 bytes.
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t prelude = kMagicBytes + 2 + length_bytes;
  if (bytes.size() < prelude) throw NpyError(fmt::format("{}: truncated inside the .npy header", name));
  const std::size_t header_length = little_endian(bytes, kMagicBytes + 2, length_bytes);
  if (bytes.size() < prelude + header_length) {
    throw NpyError(fmt::format("{}: truncated: the header says {} bytes of header, the file has {} after the "
                               "prelude",
                               name, header_length, bytes.size() - prelude));
  }
  const std::string header = bytes.substr(prelude, header_length);

  HeaderParser parser(header, name);
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape_value = nullptr;
  const auto entries = parser.dict();
  for (const auto& [key, value] : entries) {
    if (key == "descr") descr = &value;
    else if (key == "fortran_order") fortran = &value;
    else if (key == "shape") shape_value = &value;
    else throw NpyError(fmt::format("{}: unexpected key '{}' in the .npy header", name, clipped(key)));
  }
  if (!descr || !fortran || !shape_value) {
    throw NpyError(fmt::format("{}: the .npy header lacks one of 'descr', 'fortran_order', 'shape': {}", name,
                               clipped(header)));
  }
  NpyArray array;
  array.dtype = parse_descr(*descr, name);
  if (fortran->kind != PyValue::Kind::boolean) {
    throw NpyError(fmt::format("{}: 'fortran_order' in the .npy header is not True or False", name));
  }
  if (fortran->flag) {
    throw NpyError(fmt::format("{}: is stored in Fortran order (fortran_order: True); only C order is read: save "
                               "numpy.ascontiguousarray(a)",
                               name));
  }
  if (shape_value->kind != PyValue::Kind::tuple) {
    throw NpyError(fmt::format("{}: 'shape' in the .npy header is not a tuple", name));
  }
  for (const PyValue& d : shape_value->items) {
    if (d.kind != PyValue::Kind::integer) throw NpyError(fmt::format("{}: 'shape' holds a non-integer", name));
    array.shape.push_back(d.number);
  }
  // The whole shape is read before its size is checked, so that the message shows every dimension.
  std::int64_t elements = 1;
  for (const std::int64_t extent : array.shape) {
    if (extent > 0 && elements > kMaxElements / extent) {
      throw NpyError(fmt::format("{}: shape {} is too large (more than 2^40 elements)", name,
                                 shape_text(array.shape)));
    }
    elements *= extent;
  }

  const std::size_t item = array.dtype == NpyDtype::float32 ? 4 : 8;
  const std::size_t needed = static_cast<std::size_t>(elements) * item;
  const std::size_t data_offset = prelude + header_length;
  const std::size_t available = bytes.size() - data_offset;
  if (available < needed) {
    throw NpyError(fmt::format("{}: truncated: shape {} of '{}' needs {} bytes of data, the file has {}", name,
                               shape_text(array.shape), npy_descr(array.dtype), needed, available));
  }
  if (available > needed) {
    throw NpyError(fmt::format("{}: has {} bytes after the data of shape {} of '{}' (several arrays in one file?); "
                               "save one array per file",
                               name, available - needed, shape_text(array.shape), npy_descr(array.dtype)));
  }
  array.values.resize(static_cast<std::size_t>(elements));
  const char* data = bytes.data() + data_offset;
  for (std::int64_t i = 0; i < elements; ++i) {
    if (array.dtype == NpyDtype::float32) {
      float x;
      std::memcpy(&x, data + i * 4, 4);
      array.values[i] = x;
    } else {
      std::memcpy(&array.values[i], data + i * 8, 8);
    }
  }
  return array;
}

std::string encode_npy(const NpyArray& array, int version) {
  if (array.size() != static_cast<std::int64_t>(array.values.size())) {
    throw std::invalid_argument(fmt::format("encode_npy: shape {} holds {} values, got {}", shape_text(array.shape),
                                            array.size(), array.values.size()));
  }
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(array.dtype),
                                 shape_text(array.shape));
  // Pad with spaces (and end with '\n') so that the data starts on a 64-byte boundary.
  const auto padded = [&](std::size_t length_bytes) {
    const std::size_t prelude = kMagicBytes + 2 + length_bytes;
    const std::size_t total = (prelude + dict.size() + 1 + 63) / 64 * 64;
    return total - prelude;
  };
  if (version == 0) version = padded(2) <= 0xffff ? 1 : 2;
  if (version != 1 && version != 2) throw std::invalid_argument("encode_npy: version must be 1 or 2");
  const std::size_t length_bytes = version == 1 ? 2 : 4;
  const std::size_t header_length = padded(length_bytes);
  if (version == 1 && header_length > 0xffff) throw std::invalid_argument("encode_npy: header too long for 1.0");
  std::string header = dict + std::string(header_length - dict.size() - 1, ' ') + '\n';

  const std::size_t item = array.dtype == NpyDtype::float32 ? 4 : 8;
  std::string out;
  out.reserve(kMagicBytes + 2 + length_bytes + header.size() + array.values.size() * item);
  out.append(kMagic, kMagicBytes);
  out.push_back(static_cast<char>(version));
  out.push_back(0);
  for (std::size_t i = 0; i < length_bytes; ++i) out.push_back(static_cast<char>((header_length >> (8 * i)) & 0xff));
  out += header;
  const std::size_t data_offset = out.size();
  out.resize(data_offset + array.values.size() * item);
  char* data = out.data() + data_offset;
  for (std::size_t i = 0; i < array.values.size(); ++i) {
    if (array.dtype == NpyDtype::float32) {
      const float x = static_cast<float>(array.values[i]);
      std::memcpy(data + i * 4, &x, 4);
    } else {
      std::memcpy(data + i * 8, &array.values[i], 8);
    }
  }
  return out;
}

}  // namespace arch_bench
