// A copy between two views of the same shape, with any strides but a contiguous innermost dim.
// Runtime plumbing rather than attention: on a GPU, copy_into's device copies run it (one launch)
// where Halide's own buffer copy issues one memcpy per contiguous run, S x H of them for a [S, H, D]
// slice of a wider tensor (DSA's expanded prefill: about 137,000 for 2048 tokens).
#pragma once

#include "Halide.h"
#include "schedules/scheduled.h"

namespace hattn {

class StridedCopy : public Halide::Generator<StridedCopy> {
public:
    Input<Buffer<float>> in{"in", 4};    // the runtime merges dims contiguous in both views, and
    Output<Buffer<float>> out{"out", 4};  // pads to 4 with extent-1 dims

    Halide::Var x{"x"}, y{"y"}, z{"z"}, w{"w"};

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(StridedCopy)
