#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/cpu/attention.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// AVX-512 tiles 64 queries, whose 4 query vectors QK takes against 6 keys at a time (24 of the 32
// vector registers accumulate; 10 loads per 24 FMAs); PV keeps 16 accumulators. AVX2 and SSE have
// 16 registers and tile 48 queries: both products keep 3 query vectors x 4 keys (or V values) = 12
// accumulators, beside the 3 query vectors and one broadcast, since an FMA unit of 2 pipes of
// latency 5 needs 10 independent chains; 4 x 4 spills, and 2 x 5 or 2 x 6 leave a tail in a
// 256-key chunk. docs/perf/log.md, "x86 prefill tiles".
PrefillTile prefill_tile(const Halide::Target &t) {
    return t.has_feature(Halide::Target::AVX512) ? PrefillTile{64, 256, 6} : PrefillTile{48, 256, 4};
}

void schedule(AttentionPrefill &g, const Halide::Target &t) {
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::PrefillCpuTiles tiles;
    tiles.query_vectors = avx512 ? 4 : 3;
    tiles.accumulators = avx512 ? 16 : 12;
    tiles.bf16_pairs = g.bf16_pairs;
    // Without AVX-512, a 16-bit or int8 cache's products widen its chunks once into panels: per
    // broadcast, the conversion's instructions outnumbered the FMAs' (docs/perf/log.md, "Prefill
    // over widened panels").
    tiles.widened_panels = !avx512 && g.kv_type != StorageType::F32 && !g.bf16_pairs;
    cpu::schedule_prefill(*g.attention, g.out, t, tiles);
}

// Decode chunks of 1024 keys (a split-KV task each): the cache is read once either way, but longer
// runs per task read it faster (the hardware prefetchers keep ahead, it seems; not settled), and
// larger chunks put GQA's scores out of L1. docs/perf/log.md, "Decode key chunks".
int decode_key_chunk(const Halide::Target &) { return 1024; }

// Decode QK reads 2 key rows side by side below D = 64 (AVX-512) or 128 (AVX2, SSE) and one row
// per step from there, which streams the cache better. AVX-512 sums QK's dot products in lanes of
// 8 floats (256-bit), not 16: the 512-bit sum's extra step costs more than its halved FMAs save.
// Likewise PV where a KV head serves one
// query head reads V rows in 256-bit vectors (a D = 128 row in 16 accumulators); groups keep
// 512-bit rows, which 256-bit vectors would split into more passes over V. docs/perf/log.md,
// "Decode QK and PV tiles".
// An int8 cache converts every code it reads: 512-bit vectors halve those instructions as they
// halve the FMAs. 16-bit caches keep f32's 256-bit lanes (docs/perf/log.md, "Storage types: what
// was built"), except for QK in bf16 pairs, whose 512-bit vdpbf16ps takes a key's 32 values at once.
// QK in int8 dots takes 64 codes per 512-bit vpdpbusd: narrower ones are AVX-VNNI, which Zen 4 lacks.
void schedule(AttentionDecode &g, const Halide::Target &t) {
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    const int lanes = avx512 ? (g.kv_type == StorageType::Int8 ? 16 : 8) : 0;
    cpu::DecodeCpuTiles tiles;
    tiles.keys_per_step = 2;
    tiles.one_key_from_head_dim = avx512 ? 64 : 128;
    tiles.qk_lanes = (g.bf16_pairs || g.int8_dots) && avx512 ? 16 : lanes;
    tiles.accumulators = avx512 ? 16 : 8;
    tiles.pv_row_lanes = lanes;
    tiles.bf16_pairs = g.bf16_pairs;
    tiles.int8_dots = g.int8_dots;
    cpu::schedule_decode(*g.attention, g.out, t, tiles);
}

}  // namespace hattn::schedules::x86
