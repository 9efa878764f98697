// 16-bit storage types (spec/attention.md section 5): a float32 rounded to bf16 or f16 and back.
// Rounding is to nearest, ties to even; an f16 value beyond its range is stored as ±65504, never
// as inf. Reading a 16-bit value back is exact.
#pragma once

#include <cstdint>

#include "hattn/dtype.h"

namespace hattn {

uint16_t bf16_bits(float value);
uint16_t f16_bits(float value);  // |value| >= 65520 (past 65504's rounding range): ±65504
float from_bf16_bits(uint16_t bits);
float from_f16_bits(uint16_t bits);

// `value` as `dtype` stores it, read back (F32: unchanged; Int8 is not a value type: unchanged).
float round_to(DType dtype, float value);
// The same for `count` values in place: what storing a layer's activations in `dtype` keeps.
void round_to(DType dtype, float *values, int64_t count);
// Whether each of `count` values is a bf16 value (its low 16 bits zero), as a bf16 layer's
// activations are.
bool all_bf16(const float *values, int64_t count);
// `count` values stored as `dtype` (BF16 or F16) bits: what a 16-bit cache or weight holds.
void to_bits(DType dtype, const float *values, uint16_t *bits, int64_t count);

}  // namespace hattn
