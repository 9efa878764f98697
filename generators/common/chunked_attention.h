// Softmax attention over key chunks with partial results, shared by the prefill and decode
// generators (spec/attention.md §1).
//
// The working set stays bounded without a per-key running-softmax recurrence (awkward in Halide
// 14): for a tile of T queries and a chunk c of C keys, three plain reductions give the chunk's
// maximum score, its sum of exp(s - max) and its partial output. A merge over chunks rescales them:
//     M = max_c m_c,  w_c = exp(m_c - M),  out = sum_c w_c o_c / sum_c w_c l_c.
// Neither the Sq x Sk scores nor a strip over all keys is materialised.
//
// The chunk results are packed into one Func `part(x, ...)` (x < D: o_c, x = D: m_c, x = D+1:
// l_c) because both the chunk's own exp and the merge consume m_c; one producer computed per
// query tile dominates all of its consumers.
//
// GQA: the g = H / Hkv query heads that share a KV head are rows of the same tile (dimension hg),
// so every K/V chunk is loaded once for the whole group and K/V are never repeated.
//
// No inf or NaN ever arises (Halide's fast-math codegen assumes none): masked scores are replaced
// by a finite sentinel, masked probabilities are select(masked, 0, ...), and a row with no visible
// key is recognised by its sum being 0 (the row's maximum contributes exp(0) = 1 when any key is
// visible) and outputs zeros.
//
// A sink is a key of value zero whose score is the head's learned sink: a row's softmax state
// starts as if it had seen that key (maximum = sink, sum = 1, output 0) instead of empty. A row
// with no visible key then outputs 0 / 1 = 0, as without a sink.
//
// Soft-capping (Gemma 2) bounds each scaled score s to softcap * tanh(s / softcap) before the
// mask and the softmax. tanh is written with exp (Halide 14 vectorises exp, and calls the scalar
// libm tanhf per lane). Schedules can specialise `score` on has_softcap, so that calls
// without it pay nothing for it. (The autoscheduled variants cannot specialise; they measured level
// with it: docs/perf/log.md, "The autoscheduled variants and soft-capping".)
#pragma once

#include <functional>

#include "Halide.h"

namespace hattn {

// Query heads are addressed as (hg, hk): head h = hk * g + hg. The callers' [.., H, D] memory is
// viewed with H split that way (no copy), so no stage ever divides by g.
struct ChunkedAttentionInputs {
    Halide::Func q;        // q(d, hg, hk, i, b): query i of sequence b, head hk * g + hg
    Halide::Func k, v;     // k(d, j, hk, b): key j of KV head hk, as stored in the cache
    // An int8 cache's row scales (j, hk, b), or none: k and v are then the codes, and the key scale
    // multiplies the row's dot product, the value scale the probability before PV, once a row
    // rather than once a value. Exprs of the input buffers, as `sink` below.
    std::function<Halide::Expr(Halide::Expr j, Halide::Expr hk, Halide::Expr b)> k_row_scale, v_row_scale;
    Halide::Expr head_dim; // D
    Halide::Expr query_len;  // Sq
    Halide::Func kv_len;   // kv_len(b): visible keys of sequence b; its queries are the last Sq
    Halide::Expr capacity; // the cache's token capacity, an upper bound of kv_len
    // At least the longest kv_len of the batch: the chunk loops end there (else the capacity would
    // bound them, and schedules that compute chunks outside the merge's loop would pay for it).
    Halide::Expr longest_kv_len;
    Halide::Expr scale;
    Halide::Expr causal;   // bool
    Halide::Func masked;   // masked(j, i, b) -> bool, or undefined for no mask
    // Attention sinks (gpt-oss): sink(hg, hk), a learned score of query head hk * g + hg that joins
    // its softmax's denominator as a key whose value is zero; read where has_sink is true. Both are
    // required (set_score_options below sets them).
    // An Expr of the input buffer, not a Func of its own: each Func renumbers the pipeline that
    // the committed tuned schedules (schedules/autotuned) address by position.
    std::function<Halide::Expr(Halide::Expr hg, Halide::Expr hk)> sink;
    Halide::Expr has_sink;
    // Soft-capping (Gemma 2): softcap > 0, read where has_softcap (a bool scalar input, which a
    // specialisation on it folds away in each branch).
    Halide::Expr softcap, has_softcap;
    // QK in bf16 pairs (AVX512-BF16's vdpbf16ps): k is bf16 and the queries are taken as bf16
    // (q_pairs; exact where they are a bf16 layer's, which the runtime checks), so the head dim
    // must be even; `scale` multiplies the products instead of the queries, which would leave bf16.
    bool bf16_pairs = false;
    // QK of an int8 cache as integer dot products (AVX512-VNNI's vpdpbusd, u8 x s8): each query row
    // is quantised per head to int8 codes q_codes with a step of max |q| / 127 (scale included),
    // the key codes offset by 128 into u8, and 128 x the row's sum of codes subtracted from each
    // product. k holds the codes and k_row_scale is set; the head dim must be a multiple of 4.
    bool int8_dots = false;
    // k and v hold each value divided by this (schedules::attention_rebias: an f16 cache's exponent
    // rebias where its bits are moved): each score and each probability before PV take it, once a
    // row, so that no product pays a multiply a value.
    float rebias = 1.0f;
    // The exp of the probabilities and of the running merge's rescale: Halide's fast_exp, or the
    // target's own approximation where its schedule family has one (schedules::fast_exp).
    std::function<Halide::Expr(const Halide::Expr &)> fast_exp = [](const Halide::Expr &x) {
        return Halide::fast_exp(x);
    };
};

// Sets in's sinks and soft-capping from the inputs both attention generators declare: sinks a
// (g, Hkv) buffer, read with its index clamped to it (schedules may compute whole tiles of heads
// past the last, as the autoscheduled ones do; callers without sinks pass a 1 x 1 buffer).
void set_score_options(ChunkedAttentionInputs &in, const Halide::ImageParam &sinks, const Halide::Expr &has_sinks,
                       const Halide::Expr &softcap, const Halide::Expr &has_softcap);

class ChunkedAttention {
public:
    // How the chunks of one query tile are combined.
    enum class Merge {
        // Chunk by chunk in order, rescaling a running (output, max, sum): the chunk stages are
        // computed inside that loop, whose bound skips every chunk the tile cannot see (causal).
        // Working set O(T·D + T·C). For prefill on GPUs.
        Running,
        // Running, with one (max, sum) per query row instead of one per element: `running_rows`
        // packs a row's state in channels, updated in channel order per chunk (an RDom, so the
        // order is the algorithm's): x = 0 the chunk's rescale exp, 1..D the output, D + 1 the sum,
        // D + 2 the max. Only channel 0 takes an exp, where Running pays two per element; the
        // channels are serial, so it suits CPUs (GPU threads over d need Running's state).
        RunningRows,
        // Every chunk's (output, max, sum) packed into `part`, then merged. The chunks are
        // independent, so a schedule can run them in parallel (split-KV). For decode.
        Partials,
    };

    // key_step: with Merge::RunningRows, the scores are computed in steps of that many keys (a QK
    // register tile's), and the steps stop at the tile's last visible key.
    ChunkedAttention(int query_tile, int key_chunk, int key_step = 1)
        : T(query_tile), C(key_chunk), key_step(key_step) {}

    // Defines every stage; `out(d, hg, hk, i, b)` is the attention output.
    void define(const ChunkedAttentionInputs &in, Merge merge, Halide::Func out);

    const int T, C, key_step;
    // Stands in for -inf: far below any real score, yet exp(masked_score - masked_score) = 1 stays
    // finite. Masked scores take it, and every maximum starts from it (or from a sink's score).
    static constexpr float masked_score = -1e30f;
    Halide::Expr head_dim;  // D, set by define(); schedules specialise on it
    Halide::Expr has_softcap;  // set by define(); schedules specialise `score` on it

    // Vars: d head dim, qi query in tile, hg head in group, qt query tile, hk KV head, b batch,
    // j key in chunk, c chunk, x packed channel of part; i indexes the output's queries:
    // out(d, hg, hk, i, b).
    Halide::Var d{"d"}, qi{"qi"}, hg{"hg"}, qt{"qt"}, hk{"hk"}, b{"b"}, j{"j"}, c{"c"}, x{"x"};
    Halide::Var i{"i"};
    Halide::RDom rd, rj, rc;
    Halide::RDom rs;             // Merge::RunningRows: the chunk's visible keys, which `score` updates
    Halide::RDom channel_chunk;  // Merge::RunningRows: x channel, y chunk (the chunk loop is y)

    Halide::Func q_tile{"q_tile"};       // (d, qi, hg, qt, hk, b): scaled queries of one tile (bf16
                                         // pairs: unscaled, in bf16)
    // With bf16 pairs (rd then runs over (pair, d)): q_pairs(pair, qi, d, hg, qt, hk, b) is
    // unscaled query value 2d + pair in bf16, so a step's 16 queries x 2 values are one vector.
    Halide::Func q_pairs{"q_pairs"};
    Halide::Var pair{"pair"};
    // With int8 dots (rd then runs over (quad, d / 4)): a query row's largest magnitude (scaled),
    // its int8 codes (d, qi, hg, qt, hk, b) and their sum.
    Halide::Func q_peak{"q_peak"}, q_codes{"q_codes"}, q_code_sum{"q_code_sum"};
    Halide::RDom rq;  // int8 dots: the head dim, which q_peak and q_code_sum reduce
    Halide::Func k_panel{"k_panel"};     // (d, j, c, hk, b): one chunk of keys, index clamped
    Halide::Func v_panel{"v_panel"};     // (d, j, c, hk, b): one chunk of values
    // The two products are reductions of their own, so a schedule can compute them one register
    // tile at a time inside the Funcs that store them (score, chunk_out).
    Halide::Func qk{"qk"};               // (qi, hg, j, c, qt, hk, b): sum over d of q * k (int8
                                         // dots: of the codes, int32)
    Halide::Func score{"score"};         // (qi, hg, j, c, qt, hk, b): qk, soft-capped where asked
    // (qi, j, c, qt, b): whether the mask hides the key from the query (masked kernels only)
    Halide::Func mask_tile{"mask_tile"};
    Halide::Func chunk_max{"chunk_max"}; // (qi, hg, c, qt, hk, b)
    Halide::Func prob{"prob"};           // (qi, hg, j, c, qt, hk, b): exp(s - m_c) or 0, times rebias
    Halide::Func chunk_sum{"chunk_sum"}; // (qi, hg, c, qt, hk, b)
    Halide::Func pv{"pv"};               // (d, qi, hg, c, qt, hk, b): sum over the chunk of p * v
    Halide::Func chunk_out{"chunk_out"}; // (d, qi, hg, c, qt, hk, b)
    // Merge::Running
    Halide::Func running{"running"};     // (d, qi, hg, qt, hk, b): Tuple(output, max, sum)
    // Merge::RunningRows
    Halide::Func running_rows{"running_rows"};  // (x, qi, hg, qt, hk, b)
    // Merge::Partials
    Halide::Func part{"part"};           // (x, qi, hg, c, qt, hk, b)
    Halide::Func merged_max{"merged_max"};  // (qi, hg, qt, hk, b)
    Halide::Func weight{"weight"};          // (qi, hg, c, qt, hk, b): exp(m_c - M) or 0
    Halide::Func merged_sum{"merged_sum"};  // (qi, hg, qt, hk, b)
    Halide::Func merged_out{"merged_out"};  // (d, qi, hg, qt, hk, b)
};

}  // namespace hattn
