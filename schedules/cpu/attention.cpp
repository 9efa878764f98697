#include "schedules/cpu/attention.h"

namespace hattn::schedules::cpu {

using namespace Halide;

namespace {

// The merge stages of one tile, computed at `at`; the tile's query rows are computed whole.
void schedule_merge(ChunkedAttention &a, Func out, const LoopLevel &at, int vec) {
    for (Func f : {a.merged_max, a.merged_sum}) {
        f.compute_at(at).bound(a.qi, 0, a.T);
        f.update().reorder(a.qi, a.rc, a.hg);
    }
    a.weight.compute_at(at);
    a.merged_out.compute_at(at).bound(a.qi, 0, a.T).vectorize(a.d, vec, TailStrategy::GuardWithIf);
    a.merged_out.update().reorder(a.d, a.rc, a.qi, a.hg).vectorize(a.d, vec, TailStrategy::GuardWithIf);
}

// The per-chunk stages, computed at `chunk` (a loop of part).
void schedule_chunk_stages(ChunkedAttention &a, const LoopLevel &chunk, int vec) {
    a.chunk_max.compute_at(chunk);
    a.chunk_sum.compute_at(chunk);
    a.prob.compute_at(chunk);
    a.chunk_out.compute_at(chunk).vectorize(a.d, vec, TailStrategy::GuardWithIf);
    a.v_panel.compute_at(chunk).vectorize(a.d, vec, TailStrategy::GuardWithIf);
}

}  // namespace

void schedule_prefill(ChunkedAttention &a, Func out, const Target &t, AttentionCpuTiles tiles) {
    const int vec = t.natural_vector_size<float>();
    const bool vector_queries = a.T % vec == 0;  // queries fill whole vectors
    Var io("io"), ii("ii"), ho("ho"), hi("hi"), qo("qo"), qv("qv"), jo("jo"), ji("ji"), q4("q4");

    out.split(a.i, io, ii, a.T, TailStrategy::GuardWithIf)
        .split(a.h, ho, hi, a.groups)
        .reorder(a.d, hi, ii, io, ho, a.b)
        .vectorize(a.d, vec, TailStrategy::GuardWithIf)
        .parallel(a.b)
        .parallel(ho)
        .parallel(io);
    const LoopLevel tile(out, io);

    // Queries transposed once per tile so the QK product is vector(queries) x broadcast(key).
    a.q_tile.compute_at(tile).reorder_storage(a.qi, a.d, a.hg);
    schedule_merge(a, out, tile, vec);
    a.part.compute_at(tile).reorder(a.x, a.qi, a.hg, a.c);
    const LoopLevel chunk(a.part, a.c);
    schedule_chunk_stages(a, chunk, vec);

    a.score.compute_at(chunk);
    if (vector_queries) {
        a.q_tile.vectorize(a.qi, vec);
        a.score.vectorize(a.qi, vec);
        a.score.update()
            .split(a.j, jo, ji, tiles.keys_per_step)
            .split(a.qi, qo, qv, vec)
            .reorder(qv, qo, ji, a.rd, jo, a.hg)
            .vectorize(qv)
            .unroll(qo)
            .unroll(ji);
        for (Func f : {a.chunk_max, a.chunk_sum}) {
            f.vectorize(a.qi, vec);
            f.update().reorder(a.qi, a.rj, a.hg).vectorize(a.qi, vec);
        }
        a.prob.reorder(a.qi, a.j, a.hg).vectorize(a.qi, vec);
    }
    a.chunk_out.update()
        .split(a.qi, qo, q4, tiles.rows_per_step, TailStrategy::GuardWithIf)
        .reorder(a.d, q4, a.rj, qo, a.hg)
        .vectorize(a.d, vec, TailStrategy::GuardWithIf)
        .unroll(q4);
}

void schedule_decode(ChunkedAttention &a, Func out, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    const Var d = out.args()[0], h = out.args()[1], b = out.args()[2];
    out.reorder(d, h, b).vectorize(d, vec, TailStrategy::GuardWithIf).parallel(b);
    const LoopLevel sequence(out, b);

    a.q_tile.compute_at(sequence);
    schedule_merge(a, out, sequence, vec);
    // Split-KV: every (chunk, KV head) pair is a task of its own.
    a.part.compute_at(sequence).reorder(a.x, a.qi, a.hg, a.hk, a.c).parallel(a.c).parallel(a.hk);
    const LoopLevel chunk(a.part, a.hk);
    schedule_chunk_stages(a, chunk, vec);
    a.score.compute_at(chunk);
    a.score.update().reorder(a.rd, a.hg, a.j);
    a.chunk_out.update().reorder(a.d, a.hg, a.rj).vectorize(a.d, vec, TailStrategy::GuardWithIf);
}

}  // namespace hattn::schedules::cpu
