#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/cpu/attention.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// AVX-512 tiles 64 queries, whose 4 query vectors QK takes against 6 keys at a time (24 of the 32
// vector registers accumulate); PV keeps 16 accumulators. Against 32-query tiles (2 query vectors
// x 8 keys) this ran 10% faster at D = 32, 64 and 128. AVX2 and SSE have 16 registers and tile 48
// queries: both products keep 3 query vectors x 4 keys (or V values) = 12 accumulators, beside the
// 3 query vectors and one broadcast. Zen 2's FMA has 2 pipes of latency 5, so fewer than 10
// independent chains cannot keep it busy: 2 x 4 (8) ran 8-18% slower, 4 x 4 spilled, and 2 x 5 or
// 2 x 6 leave a tail in a 256-key chunk.
PrefillTile prefill_tile(const Halide::Target &t) {
    return t.has_feature(Halide::Target::AVX512) ? PrefillTile{64, 6} : PrefillTile{48, 4};
}

void schedule(AttentionPrefill &g, const Halide::Target &t) {
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::PrefillCpuTiles tiles;
    tiles.query_vectors = avx512 ? 4 : 3;
    tiles.accumulators = avx512 ? 16 : 12;
    cpu::schedule_prefill(*g.attention, g.out, t, tiles);
}

// Decode chunks of 1024 keys (a split-KV task each) read the cache faster than 512 on the Zen 5
// EPYC, 2 threads, medians of 3 alternating rounds (ms, 512 -> 1024): T = 32K MHA D = 128 9.96 ->
// 8.02, D = 32 2.92 -> 2.53, GQA g = 4 D = 64 1.42 -> 1.32; T = 4K B = 8 GQA D = 128 9.82 -> 7.37;
// AVX2 alike (D = 32 3.12 -> 2.52). Larger chunks favoured D = 32 and MHA further (2048: D = 32
// 2.25) but lost at GQA, whose scores then leave L1. 256 ran 21% slower. The cache is read once
// either way; longer runs per task seem to keep the hardware prefetchers ahead (not settled).
int decode_key_chunk(const Halide::Target &) { return 1024; }

// Decode QK reads 2 key rows side by side below D = 64 (AVX-512) or 128 (AVX2, SSE) and one row
// per step from there: on the Zen 5 EPYC one row read the cache 20-40% faster at D = 128 on both
// sub-targets (MHA and GQA, T = 32K) and 10-50% faster at D = 64 on AVX-512, where AVX2 at D = 64
// and both at D = 32 were as fast or faster with 2 (on the AVX-512 Xeon 2 had been 1-8% faster).
// AVX-512 sums QK's dot products in lanes of 8 floats (256-bit), not 16: on the Zen 5 EPYC,
// 2 threads, T = 32K, GB/s (medians of 5 rounds), MHA D=128 35 → 40, D=64 38 → 40, D=32 27 → 28,
// GQA within noise; in cache MHA ran 35 → 44 (one thread). Half the FMAs per key did not pay for
// the 512-bit sum's extra step; why 256-bit streams better here is not settled (docs/perf/log.md).
// Likewise PV where a KV head serves one query head reads V rows in 256-bit vectors (a D = 128 row
// in 16 accumulators): MHA T = 32K, 1024-key chunks, medians of 3 alternating rounds, twice:
// D = 128 +11% and +15%, D = 32 +9% and +2%, D = 64 and B = 4 T = 4K +1-2%. Groups keep 512-bit
// rows, which 256-bit vectors would split into more passes over V (GQA g = 4 D = 64 ran 37% slower).
void schedule(AttentionDecode &g, const Halide::Target &t) {
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::DecodeCpuTiles tiles;
    tiles.keys_per_step = 2;
    tiles.one_key_from_head_dim = avx512 ? 64 : 128;
    tiles.qk_lanes = avx512 ? 8 : 0;
    tiles.accumulators = avx512 ? 16 : 8;
    tiles.pv_row_lanes = avx512 ? 8 : 0;
    cpu::schedule_decode(*g.attention, g.out, t, tiles);
}

}  // namespace hattn::schedules::x86
