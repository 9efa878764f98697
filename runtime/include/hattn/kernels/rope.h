// Rotary position embedding (NeoX rotate-half on the first rotary_dim dims of each head).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hattn/tensor.h"

namespace hattn {

// How a model stretches RoPE beyond the context it was trained at (Hugging Face's rope_scaling or
// rope_parameters): `Linear` divides every frequency by `factor`; `Llama3` (Llama 3.1 and later)
// divides the low frequencies (wavelengths above original_context / low_freq_factor) by `factor`,
// keeps the high ones (below original_context / high_freq_factor), and blends in between. `Yarn`
// (YaRN, arXiv:2309.00071; Qwen's long-context configs) keeps the pairs that turn more than
// beta_fast times over original_context, divides those turning fewer than beta_slow times by
// `factor`, ramps linearly (in pair index) in between, and scales cos and sin, so q and k, by
// attention_factor. `LongRope` (Phi-3, Phi-4-mini) divides each pair's frequency by a factor of
// its own and scales cos and sin by attention_factor too; it has two sets of factors, the long one
// for calls whose positions pass original_context (long_factor_scaling() gives that scaling).
// `Dynamic` (dynamic NTK) raises the base for a call longer than original_context (its length
// `length`, as dynamic_ntk_scaling() sets it): base (factor L / original - (factor - 1))^(d / (d - 2));
// within original_context, Hunyuan's "alpha" raises it to base alpha^(d / (d - 2)).
struct RopeScaling {
    enum class Type { None, Linear, Llama3, Yarn, LongRope, Dynamic };
    Type type = Type::None;
    double factor = 1.0;
    double low_freq_factor = 1.0, high_freq_factor = 4.0;  // Llama3
    double original_context = 8192.0;                       // Llama3 and Yarn
    double beta_fast = 32.0, beta_slow = 1.0;               // Yarn: the ramp's ends, in turns
    bool truncate = true;                                   // Yarn: the ends rounded outwards to whole dims
    double attention_factor = 1.0;                          // Yarn, LongRope: the table's amplitude
    // LongRope: each pair's divisor, in the set for calls within original_context (short_factor)
    // and the set past it (long_factor); `long_factors_used` says which this table's frequencies take.
    std::vector<double> short_factors, long_factors;
    bool long_factors_used = false;
    // Dynamic: the call's length (last position + 1); at most original_context: no NTK growth (the
    // base as stated, or raised by alpha)
    double length = 0;
    double alpha = 1.0;  // Dynamic (Hunyuan): the base's factor alpha^(d / (d - 2)) within original_context
};

// The amplitude a table of this scaling has: YaRN's and LongRope's attention_factor, else 1.
double rope_amplitude(const RopeScaling &scaling);

// LongRope's scaling for calls whose positions pass original_context: the long factors. (As
// transformers does, each call rotates all its tokens by one set, chosen by its last position;
// keys already cached keep theirs.)
RopeScaling long_factor_scaling(const RopeScaling &scaling);

// Dynamic NTK's scaling for a call of `length` positions (its last position + 1). (As transformers
// does for a growing generation: each call turns its tokens by its own base; keys already cached
// keep theirs.)
RopeScaling dynamic_ntk_scaling(const RopeScaling &scaling, int64_t length);

// The rotation frequency of each pair i < rotary_dim / 2: base^(-2i / rotary_dim), then scaled.
std::vector<double> rope_frequencies(int64_t rotary_dim, double base, const RopeScaling &scaling = {});

// A table's amplitude at each position, positive. Constant for RoPE (YaRN's and LongRope's
// attention_factor, else 1); Llama 4's query temperature is a table of zero frequencies whose
// amplitude grows with the position, so that the rope kernel scales each token by it.
using RopeAmplitude = std::function<double(int64_t position)>;

// cos and sin of pos * frequency[i] for each pair i (by default base^(-2i / rotary_dim)), computed
// in double and stored as float, for positions [0, positions()). Immutable once built, so the
// kernel calls of any number of threads may read one table.
class RopeTable {
public:
    RopeTable(int64_t rotary_dim, double base, int64_t positions);
    // rotary_dim = 2 x the frequencies' count; the table holds amplitude x cos and amplitude x sin.
    RopeTable(std::vector<double> frequencies, int64_t positions, double amplitude = 1.0);
    RopeTable(std::vector<double> frequencies, int64_t positions, RopeAmplitude amplitude);
    // Only the positions [first, end): one call's table (dynamic NTK's), which apply_rope indexes by
    // position as any other.
    static RopeTable rows(std::vector<double> frequencies, int64_t first, int64_t end);

    int64_t rotary_dim() const { return 2 * static_cast<int64_t>(frequencies_.size()); }
    int64_t first_position() const { return first_; }
    int64_t positions() const { return positions_; }  // one past the last

    // The same table for more positions, reusing these values (growth costs only the new rows).
    RopeTable extended(int64_t positions) const;

    // Each of `batch` sequences' first row in this table for its positions start[b] .. start[b] +
    // count - 1, rotating heads of head_dim dims. Throws Error naming `who` where a position is
    // outside the table or the rotary dimension exceeds the head's (what every kernel reading a
    // table checks).
    std::vector<int32_t> rows_for(const std::vector<int32_t> &start, int64_t batch, int64_t count, int64_t head_dim,
                                  const std::string &who) const;

    // [positions - first_position, rotary_dim / 2]. Resident on a GPU: uploaded once per table, not
    // per call.
    ConstTensorView cos() const { return cos_.view(); }
    ConstTensorView sin() const { return sin_.view(); }

private:
    RopeTable(const RopeTable *prefix, std::vector<double> frequencies, int64_t positions, RopeAmplitude amplitude,
              int64_t first = 0);

    std::vector<double> frequencies_;
    RopeAmplitude amplitude_;
    int64_t first_ = 0;
    int64_t positions_;
    Tensor cos_, sin_;
};

// A layer's RoPE table, grown on demand by calls that may run on several threads at once: each
// call takes the table it needs and holds it, so growth by another thread (which builds a new
// table) never changes or frees what a running kernel reads.
class GrowingRopeTable {
public:
    GrowingRopeTable(int64_t rotary_dim, double base);
    // rope_frequencies(rotary_dim, base, scaling), with rope_amplitude(scaling) as the amplitude.
    GrowingRopeTable(int64_t rotary_dim, double base, const RopeScaling &scaling);
    explicit GrowingRopeTable(std::vector<double> frequencies, double amplitude = 1.0);
    GrowingRopeTable(std::vector<double> frequencies, RopeAmplitude amplitude);
    GrowingRopeTable(const GrowingRopeTable &other);
    GrowingRopeTable &operator=(const GrowingRopeTable &other);

    // A table of at least `positions` positions; grows by doubling, so a decode loop rebuilds it
    // only O(log n) times.
    std::shared_ptr<const RopeTable> covering(int64_t positions) const;

private:
    // The table so far, which carries the frequencies. Read and replaced only with
    // std::atomic_load / atomic_store / atomic_compare_exchange (C++17's atomic shared_ptr access;
    // C++20 has std::atomic<std::shared_ptr> for it), which makes covering() safe to call
    // concurrently.
    mutable std::shared_ptr<const RopeTable> table_;
};

enum class RopeLayout {
    NeoX,         // pairs (i, i + rotary_dim / 2)
    Interleaved,  // GLM: de-interleave (x0, x2, .., x1, x3, ..), then NeoX; output de-interleaved
};

// y = rope(x): x and y are [B, S, H, D] (y may be a strided view, e.g. into a KV cache); token s
// of sequence b has position start[b] + s. The table must cover every position.
void apply_rope(const ConstTensorView &x, const RopeTable &table, const std::vector<int32_t> &start,
                const TensorView &y, RopeLayout layout = RopeLayout::NeoX);

}  // namespace hattn
