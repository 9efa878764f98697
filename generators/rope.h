// Rotary position embedding on the first rotary_dim dims of every head; the rest pass through.
// Layouts: NeoX "rotate half" (spec/attention.md §1), or `interleaved` (GLM's, §4): the rotated
// dims are first de-interleaved (x0, x1, x2, x3, .. -> x0, x2, .., x1, x3, ..), then rotated
// NeoX-style, and the result stays in the de-interleaved order. x and y are [B, S, H, D]; token s of
// sequence b has position start[b] + s. The angles come in as cos/sin tables (half, position)
// computed in double by the runtime, so precision does not decay with position.
// y may be a strided view into a KV cache, so keys are rotated on their way in.
#pragma once

#include "Halide.h"
#include "schedules/scheduled.h"

namespace hattn {

class Rope : public Halide::Generator<Rope> {
public:
    GeneratorParam<bool> interleaved{"interleaved", false};

    Input<Buffer<float>> x{"x", 4};          // (D, H, S, B)
    Input<Buffer<float>> cos_table{"cos_table", 2};  // (rotary_dim / 2, positions)
    Input<Buffer<float>> sin_table{"sin_table", 2};
    Input<Buffer<int32_t>> start{"start", 1};  // (B)
    Output<Buffer<float>> y{"y", 4};         // (D, H, S, B)

    Halide::Var d{"d"}, h{"h"}, s{"s"}, b{"b"};

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(Rope)
