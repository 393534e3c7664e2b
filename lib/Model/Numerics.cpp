//===- Numerics.cpp - Storage formats: bf16, f16, MXFP4 -------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace k3::model {

float bf16ToFloat(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t floatToBf16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, 4);
  if (std::isnan(value))
    return uint16_t((u >> 16) | 0x40); // keep it a quiet NaN
  u += 0x7FFF + ((u >> 16) & 1);       // round to nearest even
  return uint16_t(u >> 16);
}

float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  float mag;
  if (exp == 0)
    mag = std::ldexp(float(man), -24); // subnormal
  else if (exp == 31)
    mag = man ? std::numeric_limits<float>::quiet_NaN()
              : std::numeric_limits<float>::infinity();
  else
    mag = std::ldexp(float(man | 0x400), int(exp) - 25);
  uint32_t u;
  std::memcpy(&u, &mag, 4);
  u |= sign;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

namespace {
constexpr float kE2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
} // namespace

float e2m1ToFloat(uint8_t code) {
  float v = kE2m1[code & 7];
  return (code & 8) ? -v : v;
}

uint8_t floatToE2m1(float value) {
  uint8_t sign = std::signbit(value) ? 8 : 0;
  float a = std::fabs(value);
  if (std::isnan(a))
    return sign; // E2M1 has no NaN; callers never pass one
  // Midpoints between neighbours; at a tie pick the even code (m = 0).
  // Codes 0..7: 0 .5 1 1.5 2 3 4 6; even codes have m = 0.
  uint8_t code = 7;
  for (uint8_t c = 0; c < 7; ++c) {
    float mid = 0.5f * (kE2m1[c] + kE2m1[c + 1]);
    if (a < mid) {
      code = c;
      break;
    }
    if (a == mid) {
      code = (c % 2 == 0) ? c : uint8_t(c + 1);
      break;
    }
  }
  return sign | code;
}

float e8m0ToFloat(uint8_t byte) {
  if (byte == 0xFF)
    return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int(byte) - 127);
}

void encodeMxfp4Block(const float *values, uint8_t &scale, uint8_t codes[32],
                      ScaleRule rule) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i)
    amax = std::fmax(amax, std::fabs(values[i]));
  int exp;
  if (amax == 0.0f || !std::isfinite(amax)) {
    exp = -127; // all zeros: any scale; use the smallest
  } else if (rule == ScaleRule::Floor) {
    exp = std::ilogb(amax) - 2; // emax of E2M1 is 2
  } else {
    exp = int(std::ceil(std::log2(amax / 6.0f)));
  }
  if (exp < -127)
    exp = -127;
  if (exp > 127)
    exp = 127;
  scale = uint8_t(exp + 127);
  for (int i = 0; i < 32; ++i)
    codes[i] = floatToE2m1(std::ldexp(values[i], -exp));
}

void packMxfp4(const float *values, int64_t rows, int64_t cols, std::vector<uint8_t> &packed,
               std::vector<uint8_t> &scales, ScaleRule rule) {
  packed.assign(rows * cols / 2, 0);
  scales.assign(rows * cols / 32, 0);
  uint8_t codes[32];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < cols / 32; ++b) {
      encodeMxfp4Block(&values[r * cols + b * 32], scales[r * (cols / 32) + b], codes, rule);
      for (int i = 0; i < 32; i += 2)
        packed[(r * cols + b * 32 + i) / 2] = uint8_t(codes[i] | codes[i + 1] << 4);
    }
}

std::vector<float> unpackMxfp4(const uint8_t *packed, const uint8_t *scales, int64_t rows,
                               int64_t cols) {
  std::vector<float> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint8_t byte = packed[r * (cols / 2) + c / 2];
      uint8_t code = c % 2 == 0 ? (byte & 0xF) : (byte >> 4); // low nibble first
      out[r * cols + c] = e2m1ToFloat(code) * e8m0ToFloat(scales[r * (cols / 32) + c / 32]);
    }
  return out;
}

float e4m3ToFloat(uint8_t byte) {
  const bool negative = byte & 0x80;
  const int e = (byte >> 3) & 0xF, m = byte & 7;
  if (e == 15 && m == 7)
    return std::numeric_limits<float>::quiet_NaN();
  float v = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(1.0f + m / 8.0f, e - 7);
  return negative ? -v : v;
}

uint8_t floatToE4m3(float value) {
  if (std::isnan(value))
    return 0x7F;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  const float a = std::fabs(value);
  // The 127 non-negative finite codes increase with their bit patterns:
  // find the last not above `a`, then round between it and the next.
  uint8_t lo = 0;
  for (uint8_t c = 1; c < 0x7F; ++c)
    if (e4m3ToFloat(c) <= a)
      lo = c;
  if (lo == 0x7E)
    return sign | lo; // saturate at 448
  const float down = e4m3ToFloat(lo), up = e4m3ToFloat(uint8_t(lo + 1));
  uint8_t code = lo;
  if (a - down > up - a || (a - down == up - a && (lo & 1)))
    code = uint8_t(lo + 1);
  return sign | code;
}

void roundMxfp8Block(const float *values, float *out) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i)
    amax = std::fmax(amax, std::fabs(values[i]));
  // Out of range (or non-finite, which fmax may skip: any NaN counts):
  // unrounded, as the compiled rounding does.
  bool finite = true;
  for (int i = 0; i < 32; ++i)
    finite = finite && std::isfinite(values[i]);
  if (!finite || amax < std::ldexp(1.0f, -100) || amax >= std::ldexp(1.0f, 121)) {
    std::copy(values, values + 32, out);
    return;
  }
  // emax of E4M3 is 8.
  int exp = std::ilogb(amax) - 8;
  for (int i = 0; i < 32; ++i)
    out[i] = std::ldexp(e4m3ToFloat(floatToE4m3(std::ldexp(values[i], -exp))), exp);
}

std::vector<uint8_t> packPanels(const uint8_t *data, int64_t rows, int64_t cols, size_t element,
                                int64_t panel) {
  std::vector<uint8_t> out(size_t(rows * cols) * element);
  for (int64_t j = 0; j < rows / panel; ++j)
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t q = 0; q < panel; ++q)
        std::memcpy(&out[size_t((j * cols + k) * panel + q) * element],
                    data + size_t((j * panel + q) * cols + k) * element, element);
  return out;
}

} // namespace k3::model
