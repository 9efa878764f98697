#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/cpu/attention.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

// NEON has 32 registers of 4 floats: a 32-query tile is 8 vectors, which QK takes 2 keys at a time
// (16 accumulators), and PV keeps 16 accumulators.
PrefillTile prefill_tile(const Halide::Target &) { return {32, 256, 2}; }

void schedule(AttentionPrefill &g, const Halide::Target &t) {
    cpu::PrefillCpuTiles tiles;
    tiles.query_vectors = 8;
    tiles.accumulators = 16;
    cpu::schedule_prefill(*g.attention, g.out, t, tiles);
}

// Not measured on an ARM machine yet: the chunk x86 used before it measured 1024.
int decode_key_chunk(const Halide::Target &) { return 512; }

void schedule(AttentionDecode &g, const Halide::Target &t) {
    cpu::DecodeCpuTiles tiles;
    tiles.keys_per_step = 1;
    tiles.accumulators = 16;
    tiles.int8_dots = g.int8_dots;
    cpu::schedule_decode(*g.attention, g.out, t, tiles);
}

}  // namespace hattn::schedules::arm
