// The DSA lightning indexer's scores (spec/attention.md §4):
//   score[s, t] = sum_h w[s, h] * relu(iq[s, h] . ik[t] * scale)   for t <= position(s)
// for the new queries s of each sequence against every cached key t; positions past a query's
// are 0 and never read. Forward and decode call this same kernel (decode with one query), and each
// score's reduction order is fixed by the algorithm (d, then h), so both select the same keys.
#pragma once

#include "Halide.h"
#include "generators/common/storage_type.h"
#include "schedules/scheduled.h"

namespace hattn {

class DsaIndexScores : public Halide::Generator<DsaIndexScores> {
public:
    Input<Buffer<float>> iq{"iq", 4};          // (ID, IH, S, B): rotated index queries
    // The cached keys' storage type (f32, bf16, f16: the layer's dtype); ik.type matches.
    GeneratorParam<StorageType> key_type{"key_type", StorageType::F32, storage_type_names};
    // The dot products in bf16 pairs (x86 AVX512-BF16): bf16 keys, queries of bf16 values and an
    // even ID, which the runtime checks before it chooses this variant.
    GeneratorParam<bool> bf16_pairs{"bf16_pairs", false};
    Input<Buffer<>> ik{"ik", 3};               // (ID, capacity, B): rotated index keys, cached
    Input<Buffer<float>> head_w{"head_w", 3};  // (IH, S, B): per-head weights, already / sqrt(IH)
    Input<Buffer<int32_t>> kv_len{"kv_len", 1};  // (B): keys of each sequence, new ones included
    Input<float> scale{"scale"};               // 1 / sqrt(ID)
    Output<Buffer<float>> score{"score", 3};   // (capacity, S, B)

    Halide::Var t{"t"}, s{"s"}, b{"b"}, h{"h"}, d{"d"}, pair{"pair"};
    Halide::RDom rd, rh;  // bf16 pairs: rd is (pair, d / 2)
    Halide::Func queries{"queries"};  // (d, h, s, b): iq with the head clamped (bf16 pairs: in bf16)
    // bf16 pairs: (pair, h, d, s, b), query value 2d + pair, so that a vector of heads' pairs is
    // one vdpbf16ps operand.
    Halide::Func q_pairs{"q_pairs"};
    Halide::Func dot{"dot"};    // (t, h, s, b): iq . ik
    Halide::Func total{"total"};  // (t, s, b)

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(DsaIndexScores)
