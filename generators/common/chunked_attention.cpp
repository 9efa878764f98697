#include "generators/common/chunked_attention.h"

namespace hattn {

using namespace Halide;

namespace {
constexpr float masked_score = ChunkedAttention::masked_score;
// softcap * tanh(s / softcap), with tanh(y) = sign(y) (1 - e) / (1 + e), e = exp(-2|y|): its
// absolute error is about float's epsilon, so the capped score's is about softcap times that.
// |y| is clamped where tanh is 1 to float precision, which keeps exp far from underflow.
Expr soft_capped(const Expr &s, const Expr &softcap) {
    const Expr y = s / softcap;
    const Expr e = exp(-2.0f * min(abs(y), 10.0f));
    const Expr t = (1.0f - e) / (1.0f + e);
    return softcap * select(y < 0.0f, -t, t);
}
}  // namespace

void set_score_options(ChunkedAttentionInputs &in, const ImageParam &sinks, const Expr &has_sinks, const Expr &softcap,
                       const Expr &has_softcap) {
    in.sink = [sinks](Expr hg, Expr hk) {
        return sinks(clamp(hg, 0, sinks.dim(0).extent() - 1), clamp(hk, 0, sinks.dim(1).extent() - 1));
    };
    in.has_sink = has_sinks;
    in.softcap = softcap;
    in.has_softcap = has_softcap;
}

void ChunkedAttention::define(const ChunkedAttentionInputs &in, Merge merge, Func out) {
    const Expr D = in.head_dim;
    head_dim = D;
    has_softcap = in.has_softcap;
    const Expr query = qt * T + qi;                      // query index within the sequence
    const Expr i_clamped = min(query, in.query_len - 1);  // tiles may run past the last query
    const Expr len = in.kv_len(b);
    const Expr position = len - in.query_len + query;    // the query's absolute position
    const Expr key = c * C + j;
    // A row's softmax state starts empty, or with its head's sink seen as a key of value zero.
    const Expr has_sink = in.has_sink;
    const Expr start_max = select(has_sink, in.sink(hg, hk), masked_score);
    const Expr start_sum = select(has_sink, 1.0f, 0.0f);
    const Expr max_chunks = (min(in.longest_kv_len, in.capacity) + C - 1) / C;

    if (in.bf16_pairs) {
        q_tile(d, qi, hg, qt, hk, b) = cast(BFloat(16), in.q(d, hg, hk, i_clamped, b));
        q_pairs(pair, qi, d, hg, qt, hk, b) = q_tile(2 * d + pair, qi, hg, qt, hk, b);
    } else {
        q_tile(d, qi, hg, qt, hk, b) = in.q(d, hg, hk, i_clamped, b) * in.scale;
    }
    if (in.int8_dots) {
        rq = RDom(0, D, "rq");
        q_peak(qi, hg, qt, hk, b) = 0.0f;
        q_peak(qi, hg, qt, hk, b) = max(q_peak(qi, hg, qt, hk, b), abs(q_tile(rq, qi, hg, qt, hk, b)));
        const Expr peak = q_peak(qi, hg, qt, hk, b);
        const Expr inverse_step = select(peak > 0.0f, 127.0f / peak, 0.0f);
        q_codes(d, qi, hg, qt, hk, b) = cast<int8_t>(round(q_tile(d, qi, hg, qt, hk, b) * inverse_step));
        q_code_sum(qi, hg, qt, hk, b) = 0;
        q_code_sum(qi, hg, qt, hk, b) += cast<int32_t>(q_codes(rq, qi, hg, qt, hk, b));
    }
    // Keys past the sequence are masked out below; clamping their index keeps the loads (and
    // Halide's bounds inference, which cannot see kv_len's values) inside the cache.
    const Expr key_clamped = clamp(key, 0, clamp(len - 1, 0, in.capacity - 1));
    k_panel(d, j, c, hk, b) = in.k(d, key_clamped, hk, b);
    v_panel(d, j, c, hk, b) = in.v(d, key_clamped, hk, b);

    // The keys any query of the tile can see end at visible_keys. The running merges never visit
    // the chunks wholly past it (their chunk loop ends at the last chunk the tile can see); the
    // partial results' merge visits them and leaves them out (see rc below).
    const Expr last_query = min((qt + 1) * T, in.query_len) - 1;
    const Expr visible_keys = select(in.causal, min(len, len - in.query_len + last_query + 1), len);
    // With RunningRows (CPU prefill) the chunk's key loops stop there too, which skips most of the
    // causal diagonal's masked keys in QK and all of them in the maximum, the sum and PV. The
    // scores are an update in steps of key_step keys (a QK register tile), the steps ending at the
    // first past visible_keys; the rest of the chunk's scores stay undefined and are read only
    // under the mask. Bounds inference ignores predicates, so the probabilities still cover the
    // whole chunk. The GPU block tiles computed wrong outputs with the key loops' predicate on
    // PoCL (not investigated): Running and Partials keep whole chunks.
    const bool stop_at_visible = merge == Merge::RunningRows;

    const auto capped = [&](const Expr &s) { return select(in.has_softcap, soft_capped(s, in.softcap), s); };
    // e times its key row's scale (int8 caches), or e.
    using RowScale = std::function<Expr(Expr, Expr, Expr)>;
    const auto scaled = [&](const RowScale &scales, const Expr &row, const Expr &e) {
        return scales ? e * scales(clamp(c * C + row, 0, clamp(len - 1, 0, in.capacity - 1)), hk, b) : e;
    };
    // in.rebias: the scores' (qk is a Func of its own, so the products stay unscaled) and the
    // probabilities' (prob holds p * rebias, so that PV reads it ready, and the sums take it away).
    const auto rebiased = [&](const Expr &e) { return in.rebias != 1.0f ? e * in.rebias : e; };
    qk(qi, hg, j, c, qt, hk, b) = in.int8_dots ? Expr(0) : Expr(0.0f);
    if (in.int8_dots) {
        // u8 x s8 in the form vpdpbusd sums (4 products a lane): the key code + 128 as u8.
        rd = RDom(0, 4, 0, D / 4, "rd");
        const Expr key_u8 = reinterpret(UInt(8), k_panel(4 * rd.y + rd.x, j, c, hk, b)) ^ cast<uint8_t>(128);
        qk(qi, hg, j, c, qt, hk, b) +=
            cast<int32_t>(cast<int16_t>(key_u8) * cast<int16_t>(q_codes(4 * rd.y + rd.x, qi, hg, qt, hk, b)));
    } else if (in.bf16_pairs) {
        rd = RDom(0, 2, 0, D / 2, "rd");
        qk(qi, hg, j, c, qt, hk, b) += cast<float>(q_pairs(rd.x, qi, rd.y, hg, qt, hk, b)) *
                                       cast<float>(k_panel(2 * rd.y + rd.x, j, c, hk, b));
    } else {
        rd = RDom(0, D, "rd");
        qk(qi, hg, j, c, qt, hk, b) += q_tile(rd, qi, hg, qt, hk, b) * k_panel(rd, j, c, hk, b);
    }
    // The products' scale where the queries could not carry it (bf16 pairs); int8 dots: the
    // offset's products taken away, times the query codes' step.
    const auto product = [&](const Expr &e) {
        if (in.int8_dots) {
            return cast<float>(e - 128 * q_code_sum(qi, hg, qt, hk, b)) * (q_peak(qi, hg, qt, hk, b) * (1.0f / 127.0f));
        }
        return in.bf16_pairs ? e * in.scale : e;
    };
    if (stop_at_visible) {
        rs = RDom(0, key_step, 0, (C + key_step - 1) / key_step, "rs");
        rs.where(c * C + rs.y * key_step < visible_keys);
        const Expr scored_key = rs.y * key_step + rs.x;
        score(qi, hg, j, c, qt, hk, b) = undef<float>();
        score(qi, hg, scored_key, c, qt, hk, b) =
            capped(rebiased(scaled(in.k_row_scale, scored_key, product(qk(qi, hg, scored_key, c, qt, hk, b)))));
    } else {
        score(qi, hg, j, c, qt, hk, b) = capped(rebiased(scaled(in.k_row_scale, j, product(qk(qi, hg, j, c, qt, hk, b)))));
    }

    // A key is visible below one limit per query (the causal diagonal or the sequence's end).
    const Expr key_limit = select(in.causal, min(len, position + 1), len);
    Expr visible = key < key_limit;
    if (in.masked.defined()) {
        // A stage of its own, so that a schedule can read a chunk's mask bytes once for every
        // head and both the maximum and the probabilities, in the order they are stored.
        mask_tile(qi, j, c, qt, b) = in.masked(key_clamped, i_clamped, b);
        visible = visible && !mask_tile(qi, j, c, qt, b);
    }
    const Expr s = select(visible, score(qi, hg, j, c, qt, hk, b), masked_score);

    rj = RDom(0, C, "rj");
    if (stop_at_visible) rj.where(c * C + rj < visible_keys);
    chunk_max(qi, hg, c, qt, hk, b) = masked_score;
    chunk_max(qi, hg, c, qt, hk, b) =
        max(chunk_max(qi, hg, c, qt, hk, b), substitute(j, rj, s));

    // in.fast_exp: Halide's polynomial (about 2^-18 relative error; the golden cases stay under
    // 1e-6; faster than exp: docs/perf/log.md, "Prefill: the running merge with one state per query
    // row"), or the target's own. Below -87 it would underflow into nonsense, and exp there is 0 to
    // float precision anyway.
    const Expr shifted = max(s - chunk_max(qi, hg, c, qt, hk, b), -87.0f);
    prob(qi, hg, j, c, qt, hk, b) = select(visible, rebiased(in.fast_exp(shifted)), 0.0f);
    chunk_sum(qi, hg, c, qt, hk, b) = 0.0f;
    const Expr unbiased = in.rebias != 1.0f ? prob(qi, hg, rj, c, qt, hk, b) * (1.0f / in.rebias)
                                            : prob(qi, hg, rj, c, qt, hk, b);
    chunk_sum(qi, hg, c, qt, hk, b) += unbiased;
    pv(d, qi, hg, c, qt, hk, b) = 0.0f;
    pv(d, qi, hg, c, qt, hk, b) += scaled(in.v_row_scale, rj, prob(qi, hg, rj, c, qt, hk, b)) * v_panel(d, rj, c, hk, b);
    chunk_out(d, qi, hg, c, qt, hk, b) = pv(d, qi, hg, c, qt, hk, b);

    rc = RDom(0, max_chunks, "rc");
    // The running merges skip the chunks past the tile's last visible key (the causal diagonal's
    // far side); their chunk stages are computed inside that loop. The partial results are
    // computed for every chunk up to the longest sequence whatever the merge visits (bounds
    // ignore predicates), and a chunk with no visible key has a sum of 0 and an output of 0 (part
    // below), which the merge leaves out, so its loops need no predicate: one made every step of
    // them a branch, which kept a GPU merge from having more than one load in flight.
    if (merge != Merge::Partials) rc.where(rc * C < visible_keys);

    if (merge == Merge::RunningRows) {
        // The same merge as Running below, with one state per row (see the header for channels).
        const Expr sum_channel = D + 1, max_channel = D + 2;
        channel_chunk = RDom(0, D + 3, 0, max_chunks, "channel_chunk");
        channel_chunk.where(channel_chunk.y * C < visible_keys);
        const RVar ch = channel_chunk.x, rcc = channel_chunk.y;
        auto state = [&](Expr channel) { return running_rows(channel, qi, hg, qt, hk, b); };
        running_rows(x, qi, hg, qt, hk, b) = select(x == max_channel, start_max, x == sum_channel, start_sum, 0.0f);
        const Expr m_c = chunk_max(qi, hg, rcc, qt, hk, b), l_c = chunk_sum(qi, hg, rcc, qt, hk, b);
        const Expr m_old = state(max_channel);
        const Expr has_keys = l_c > 0.0f;
        const Expr grows = has_keys && m_c > m_old;
        const Expr e = state(0);  // channel 0, written first in this chunk
        const Expr rescale = select(grows, e, 1.0f);
        const Expr w = select(has_keys, select(grows, 1.0f, e), 0.0f);
        const Expr o_c = chunk_out(clamp(ch - 1, 0, D - 1), qi, hg, rcc, qt, hk, b);
        running_rows(ch, qi, hg, qt, hk, b) =
            select(ch == 0, exp(min(m_old, m_c) - max(m_old, m_c)),
                   ch <= D, state(ch) * rescale + w * o_c,
                   ch == sum_channel, state(sum_channel) * rescale + w * l_c,
                   select(grows, m_c, m_old));
        const Expr total = running_rows(sum_channel, i % T, hg, i / T, hk, b);
        out(d, hg, hk, i, b) =
            select(total > 0.0f, running_rows(d + 1, i % T, hg, i / T, hk, b) / total, 0.0f);
        return;
    }

    if (merge == Merge::Running) {
        // Online softmax at chunk granularity: (O, M, L) are rescaled to each new maximum.
        const Expr m_c = chunk_max(qi, hg, rc, qt, hk, b), l_c = chunk_sum(qi, hg, rc, qt, hk, b);
        const Expr o_c = chunk_out(d, qi, hg, rc, qt, hk, b);
        running(d, qi, hg, qt, hk, b) = Tuple(0.0f, start_max, start_sum);
        const FuncRef r = running(d, qi, hg, qt, hk, b);
        // Of the old and the chunk's maximum, the smaller is rescaled by exp(smaller - larger) and
        // the larger by 1: one exp per element, where exp(old - new) and exp(m_c - new) took two.
        const Expr has_keys = l_c > 0.0f;
        const Expr grows = has_keys && m_c > r[1];
        const Expr m_new = select(grows, m_c, r[1]);
        // (Clamped where exp underflows: a fast exp is only defined over float's range.)
        const Expr e = in.fast_exp(max(min(r[1], m_c) - max(r[1], m_c), -87.0f));
        const Expr rescale = select(grows, e, 1.0f);  // without a sink, ~0 the first time a key shows up
        const Expr w = select(has_keys, select(grows, 1.0f, e), 0.0f);
        running(d, qi, hg, qt, hk, b) = Tuple(r[0] * rescale + w * o_c, m_new, r[2] * rescale + w * l_c);
        const Expr total = running(d, i % T, hg, i / T, hk, b)[2];
        out(d, hg, hk, i, b) =
            select(total > 0.0f, running(d, i % T, hg, i / T, hk, b)[0] / total, 0.0f);
        return;
    }

    // A chunk with no visible key outputs 0, whatever its clamped rows hold: a sequence that sees
    // no key at all reads rows nobody wrote (NaN, say), and 0 x NaN would reach the merge.
    const Expr l_c = chunk_sum(qi, hg, c, qt, hk, b);
    part(x, qi, hg, c, qt, hk, b) =
        select(x < D, select(l_c > 0.0f, chunk_out(min(x, D - 1), qi, hg, c, qt, hk, b), 0.0f),
               x == D, chunk_max(qi, hg, c, qt, hk, b), l_c);

    const Expr has_keys = part(D + 1, qi, hg, rc, qt, hk, b) > 0.0f;

    merged_max(qi, hg, qt, hk, b) = start_max;
    merged_max(qi, hg, qt, hk, b) = max(merged_max(qi, hg, qt, hk, b),
                                        select(has_keys, part(D, qi, hg, rc, qt, hk, b), masked_score));
    weight(qi, hg, c, qt, hk, b) =
        select(part(D + 1, qi, hg, c, qt, hk, b) > 0.0f,
               exp(part(D, qi, hg, c, qt, hk, b) - merged_max(qi, hg, qt, hk, b)), 0.0f);
    // The sink's own weight (the same exp as the chunks' weights: its argument is at most 0).
    merged_sum(qi, hg, qt, hk, b) = select(has_sink, exp(start_max - merged_max(qi, hg, qt, hk, b)), 0.0f);
    merged_sum(qi, hg, qt, hk, b) +=
        weight(qi, hg, rc, qt, hk, b) * part(D + 1, qi, hg, rc, qt, hk, b);
    merged_out(d, qi, hg, qt, hk, b) = 0.0f;
    merged_out(d, qi, hg, qt, hk, b) += weight(qi, hg, rc, qt, hk, b) * part(d, qi, hg, rc, qt, hk, b);

    // A query with no visible key (fully masked, or an empty cache) outputs zeros.
    const Expr total = merged_sum(i % T, hg, i / T, hk, b);
    out(d, hg, hk, i, b) = select(total > 0.0f, merged_out(d, i % T, hg, i / T, hk, b) / total, 0.0f);
}

}  // namespace hattn
