//===- Numerics.h - Storage formats: bf16, f16, MXFP4 -----------*- C++ -*-===//
//
// Part of k3. Scalar conversions between the checkpoint's storage formats
// and f32, bit-exact with the OCP MX v1.0 tables (MOE_MXFP4.md §1-2). The
// compiled code decodes MXFP4 inside its GEMMs; these are the scalar
// reference and the synthetic-checkpoint encoder.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_MODEL_NUMERICS_H
#define LIB_MODEL_NUMERICS_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3::model {

float bf16ToFloat(uint16_t bits);
/// Round to nearest even; NaN stays NaN.
uint16_t floatToBf16(float value);
float f16ToFloat(uint16_t bits);

/// E2M1 code (`s e1 e0 m`) → value: 0, .5, 1, 1.5, 2, 3, 4, 6 and negatives.
float e2m1ToFloat(uint8_t code);
/// Nearest E2M1 code, ties to even mantissa, saturating at ±6 (OCP).
uint8_t floatToE2m1(float value);

/// E8M0 scale byte → 2^(byte − 127); 0xFF is NaN.
float e8m0ToFloat(uint8_t byte);

/// E4M3 (MXFP8) byte → value: bias 7, subnormals down to 2^-9, ±448 at
/// most, S.1111.111 is NaN, no infinities.
float e4m3ToFloat(uint8_t byte);
/// Nearest E4M3 value, ties to even mantissa, finite values saturating at
/// ±448 (OCP); NaN → 0x7F.
uint8_t floatToE4m3(float value);

/// Rounds 32 values through MXFP8 E4M3 (scale 2^(floor(log2 amax) − 8),
/// OCP floor rule) and back: what `k3.moe {mxfp8_inputs}` feeds its GEMMs.
/// A block with amax outside [2^-100, 2^121), or a non-finite value, is
/// returned unrounded.
void roundMxfp8Block(const float *values, float *out);

/// How the shared exponent of an MX block is chosen (MOE_MXFP4.md §2).
enum class ScaleRule {
  Floor, ///< OCP: 2^(floor(log2 amax) − 2); may clip the top of a binade.
  Ceil,  ///< 2^ceil(log2(amax / 6)): never clips.
};

/// Encodes 32 values as one E8M0 scale byte and 32 E2M1 codes.
void encodeMxfp4Block(const float *values, uint8_t &scale, uint8_t codes[32],
                      ScaleRule rule = ScaleRule::Floor);

/// Quantizes a row-major [rows, cols] matrix (cols a multiple of 32) to
/// MXFP4 along its rows: `packed` [rows, cols/2] codes, low nibble first
/// (element 2i in bits 3:0), and `scales` [rows, cols/32] E8M0 bytes.
void packMxfp4(const float *values, int64_t rows, int64_t cols, std::vector<uint8_t> &packed,
               std::vector<uint8_t> &scales, ScaleRule rule = ScaleRule::Floor);

/// A row-major [rows, cols] matrix of `element`-byte values laid out as its
/// panels [rows/panel, cols, panel] (rows a multiple of panel): panel j,
/// column k, lane q holds element (j·panel + q, k). The CPU GEMMs' weight
/// layout (k3-pack-weight-panels); bytes are moved, not converted.
std::vector<uint8_t> packPanels(const uint8_t *data, int64_t rows, int64_t cols, std::size_t element,
                                int64_t panel);

/// The inverse of packMxfp4: each element `e2m1 · 2^(scale − 127)`.
std::vector<float> unpackMxfp4(const uint8_t *packed, const uint8_t *scales, int64_t rows,
                               int64_t cols);

} // namespace k3::model

#endif // LIB_MODEL_NUMERICS_H
