//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// Part of k3. Format: "\x93NUMPY", major, minor, header length (u16 for
// version 1, u32 for 2 and 3), then a Python dict literal with 'descr',
// 'fortran_order' and 'shape', space-padded to a multiple of 64 bytes with a
// final newline, then the data.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace k3rt {
namespace {

/// The value text after `'key':` in the header dict, or "" if absent.
std::string field(const std::string &dict, const std::string &key) {
  size_t at = dict.find("'" + key + "'");
  if (at == std::string::npos)
    return "";
  at = dict.find(':', at);
  if (at == std::string::npos)
    return "";
  size_t begin = dict.find_first_not_of(' ', at + 1);
  if (begin == std::string::npos)
    return "";
  char open = dict[begin];
  size_t end;
  if (open == '\'')
    end = dict.find('\'', begin + 1) + 1;
  else if (open == '(')
    end = dict.find(')', begin) + 1;
  else
    end = dict.find_first_of(",}", begin);
  if (end == std::string::npos || end == 0)
    return "";
  return dict.substr(begin, end - begin);
}

int64_t bytesOf(const std::string &dtype) {
  if (dtype == "<f4" || dtype == "<i4" || dtype == "<u4")
    return 4;
  if (dtype == "<i8" || dtype == "<f8" || dtype == "<u8")
    return 8;
  if (dtype == "<f2" || dtype == "<i2")
    return 2;
  if (dtype == "|u1" || dtype == "|i1" || dtype == "|b1")
    return 1;
  return 0;
}

} // namespace

int64_t NpyArray::elementBytes() const { return bytesOf(dtype); }

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string file = ss.str();
  auto bad = [&](const std::string &why) {
    error = path + ": not a valid .npy file: " + why;
    return false;
  };
  if (file.size() < 10 || file.compare(0, 6, "\x93NUMPY") != 0)
    return bad("missing the \\x93NUMPY magic");
  int major = uint8_t(file[6]);
  size_t headerLen, dataAt;
  if (major == 1) {
    headerLen = uint8_t(file[8]) | size_t(uint8_t(file[9])) << 8;
    dataAt = 10 + headerLen;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12)
      return bad("truncated header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = headerLen << 8 | uint8_t(file[8 + i]);
    dataAt = 12 + headerLen;
  } else {
    return bad("version " + std::to_string(major) + " is unknown");
  }
  if (dataAt > file.size())
    return bad("truncated header");
  std::string dict = file.substr(dataAt - headerLen, headerLen);
  std::string descr = field(dict, "descr");
  std::string order = field(dict, "fortran_order");
  std::string shape = field(dict, "shape");
  if (descr.size() < 2 || order.empty() || shape.size() < 2)
    return bad("the header needs 'descr', 'fortran_order' and 'shape'");
  out.dtype = descr.substr(1, descr.size() - 2);
  if (bytesOf(out.dtype) == 0)
    return bad("dtype '" + out.dtype + "' is not supported");
  order.erase(order.find_last_not_of(' ') + 1);
  if (order != "False")
    return bad("Fortran-order arrays are not supported");
  // A tuple of decimal sizes: "()", "(5,)", "(2, 3)", nothing else.
  out.shape.clear();
  std::string dims = shape.substr(1, shape.size() - 2);
  int64_t elements = 1;
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t end = dims.find(',', pos);
    std::string item = dims.substr(pos, end == std::string::npos ? end : end - pos);
    size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) {
      if (end == std::string::npos && !out.shape.empty())
        break; // the trailing comma of "(5,)"
      return bad("shape " + shape + " is not a tuple of sizes");
    }
    item = item.substr(b, e - b + 1);
    if (item.size() > 18 || item.find_first_not_of("0123456789") != std::string::npos)
      return bad("shape " + shape + " is not a tuple of sizes");
    int64_t v = std::stoll(item);
    if (__builtin_mul_overflow(elements, v, &elements) || elements > (int64_t(1) << 40))
      return bad("shape " + shape + " is too large");
    out.shape.push_back(v);
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  int64_t want = out.numElements() * bytesOf(out.dtype);
  if (int64_t(file.size() - dataAt) != want)
    return bad("holds " + std::to_string(file.size() - dataAt) +
               " data bytes, but " + out.dtype + " " + shape + " needs " +
               std::to_string(want));
  out.data.assign(file.begin() + dataAt, file.end());
  return true;
}

bool writeNpy(const std::string &path, const NpyArray &a, std::string &error) {
  // Python tuple syntax: (), (5,), (2, 3).
  std::string dims = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) {
    dims += std::to_string(a.shape[i]);
    if (a.shape.size() == 1)
      dims += ",";
    else if (i + 1 < a.shape.size())
      dims += ", ";
  }
  dims += ")";
  std::string dict = "{'descr': '" + a.dtype +
                     "', 'fortran_order': False, 'shape': " + dims + ", }";
  // Pad so that magic + length + dict is a multiple of 64, ending in '\n'.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = path + ": cannot write";
    return false;
  }
  char preamble[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0,
                       char(dict.size() & 0xFF), char(dict.size() >> 8)};
  out.write(preamble, 10);
  out << dict;
  out.write(reinterpret_cast<const char *>(a.data.data()), a.data.size());
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

NpyArray makeF32(const std::vector<int64_t> &shape, const float *values) {
  NpyArray a;
  a.dtype = "<f4";
  a.shape = shape;
  a.data.resize(a.numElements() * 4);
  if (!a.data.empty()) // an empty array may come with a null `values`
    std::memcpy(a.data.data(), values, a.data.size());
  return a;
}

} // namespace k3rt
