// float32 values rounded to a 16-bit storage type and kept as float32 (spec/attention.md section 5:
// to nearest, ties to even; an f16 value past its range as +-65504): a layer's activations rounded
// where each kernel stored them, in place, on the device that holds them. The same rule as
// hattn/half.h's host rounding, written in 32-bit integer operations (no 16-bit type on any target).
#pragma once

#include "Halide.h"
#include "generators/common/storage_type.h"
#include "schedules/scheduled.h"

namespace hattn {

class RoundValues : public Halide::Generator<RoundValues> {
public:
    GeneratorParam<StorageType> to{"to", StorageType::BF16, storage_type_names};  // bf16 or f16

    Input<Buffer<float>> in{"in", 1};
    Output<Buffer<float>> out{"out", 1};  // may be `in` itself

    Halide::Var i{"i"};

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(RoundValues)
