#include "hattn/layers/latent_attention.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

#include "activation_rounding.h"
#include "device_residency.h"
#include "finite_input.h"
#include "hf_rope.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/kernels/attention.h"
#include "quoted.h"

namespace hattn {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// `max(1, E / n)`: the seed's defaults of the form E/n or H/n.
int64_t share(int64_t total, int64_t n) { return std::max<int64_t>(1, total / n); }

// The rows of b ([N, ...]) after those of a: ZAYA's q_proj and k_proj as one packed projection.
Tensor concat_rows(const Tensor &a, const Tensor &b) {
    Shape shape = a.shape();
    shape[0] += b.dim(0);
    std::vector<float> values(a.values());
    values.insert(values.end(), b.values().begin(), b.values().end());
    return Tensor(shape, std::move(values));
}

// Depthwise identity (k = 1, w = 1) or grouped identity (w[o, o % dh, 0] = 1): the exact stand-in
// for a convolution layer the model does not have.
Tensor identity_depthwise(int64_t P) { return Tensor({P, 1, 1}, std::vector<float>(P, 1.0f)); }
Tensor identity_grouped(int64_t P, int64_t dh) {
    Tensor w({P, dh, 1});
    for (int64_t o = 0; o < P; o++) w.data()[o * dh + o % dh] = 1.0f;
    return w;
}

}  // namespace

LatentAttentionConfig LatentAttentionConfig::cca(const ConfigReader &c, bool grouped) {
    const std::string src = c.source();
    const std::string p = grouped ? "ccgqa_" : "cca_";
    // The seed's keys of both modules (a CCA config may carry CCGQA's keys, and the reverse).
    std::vector<std::string> known{"hidden_size", "num_heads", "mode", "use_bitnet", "dropout", "rope_base",
                                   "cca_latent_rank", "ccgqa_query_latent_rank", "ccgqa_kv_latent_rank",
                                   "ccgqa_num_kv_heads"};
    for (const char *prefix : {"cca_", "ccgqa_"}) {
        for (const char *key : {"num_conv_layers", "conv_kernel_seq", "conv_kernel_ch", "qk_mean", "value_shift"}) {
            known.push_back(std::string(prefix) + key);
        }
    }
    c.refuse_likely_typos(known);
    LatentAttentionConfig cfg;
    cfg.hidden = c.get_int("hidden_size");
    cfg.heads = c.get_int("num_heads");
    require(cfg.hidden > 0, [&] { return src + ": hidden_size must be positive, got " + str(cfg.hidden); });
    require(cfg.heads > 0, [&] { return src + ": num_heads must be positive, got " + str(cfg.heads); });
    require(cfg.hidden % cfg.heads == 0, [&] {
        return src + ": hidden_size (" + str(cfg.hidden) + ") must be divisible by num_heads (" + str(cfg.heads) + ")";
    });
    int64_t Lq, Lkv;
    if (grouped) {
        Lq = c.get_int("ccgqa_query_latent_rank", share(cfg.hidden, 2));
        Lkv = c.get_int("ccgqa_kv_latent_rank", share(cfg.hidden, 8));
        cfg.kv_heads = c.get_int("ccgqa_num_kv_heads", share(cfg.heads, 4));
        require(cfg.kv_heads > 0 && cfg.heads % cfg.kv_heads == 0, [&] {
            return src + ": num_heads (" + str(cfg.heads) + ") must be divisible by ccgqa_num_kv_heads (" +
                   str(cfg.kv_heads) + ")";
        });
    } else {
        Lq = Lkv = c.get_int("cca_latent_rank", share(cfg.hidden, 4));
        cfg.kv_heads = cfg.heads;
    }
    const std::string lq_key = grouped ? "ccgqa_query_latent_rank" : "cca_latent_rank";
    const std::string lkv_key = grouped ? "ccgqa_kv_latent_rank" : "cca_latent_rank";
    require(Lq > 0, [&] { return src + ": " + lq_key + " must be positive, got " + str(Lq); });
    require(Lkv > 0, [&] { return src + ": " + lkv_key + " must be positive, got " + str(Lkv); });
    require(Lq % cfg.heads == 0, [&] {
        return src + ": " + lq_key + " (" + str(Lq) + ") must be divisible by num_heads (" + str(cfg.heads) + ")";
    });
    require(Lkv % cfg.kv_heads == 0, [&] {
        return src + ": " + lkv_key + " (" + str(Lkv) + ") must be divisible by the KV heads (" + str(cfg.kv_heads) +
               ")";
    });
    require(Lkv <= Lq, [&] {
        return src + ": " + lkv_key + " (" + str(Lkv) + ") must not exceed " + lq_key + " (" + str(Lq) + ")";
    });
    require(Lq / cfg.heads == Lkv / cfg.kv_heads, [&] {
        return src + ": head dims differ: " + lq_key + " / num_heads = " + str(Lq / cfg.heads) + ", " + lkv_key +
               " / KV heads = " + str(Lkv / cfg.kv_heads);
    });
    cfg.head_dim = Lq / cfg.heads;
    require(cfg.head_dim % 2 == 0, [&] {
        return src + ": the head dim " + lq_key + " / num_heads = " + str(cfg.head_dim) + " must be even (RoPE)";
    });
    cfg.num_conv_layers = static_cast<int>(c.get_int(p + "num_conv_layers", 2));
    require(cfg.num_conv_layers >= 0 && cfg.num_conv_layers <= 2,
            [&] { return src + ": " + p + "num_conv_layers must be 0, 1 or 2, got " + str(cfg.num_conv_layers); });
    cfg.conv_kernel_seq = c.get_int(p + "conv_kernel_seq", 4);
    cfg.conv_kernel_ch = c.get_int(p + "conv_kernel_ch", 3);
    require(cfg.conv_kernel_seq >= 1,
            [&] { return src + ": " + p + "conv_kernel_seq must be at least 1, got " + str(cfg.conv_kernel_seq); });
    require(cfg.conv_kernel_ch >= 1,
            [&] { return src + ": " + p + "conv_kernel_ch must be at least 1, got " + str(cfg.conv_kernel_ch); });
    cfg.qk_mean = c.get_bool(p + "qk_mean", true);
    cfg.value_shift = c.get_bool(p + "value_shift", true);
    if (cfg.value_shift) {
        require(cfg.kv_heads % 2 == 0, [&] {
            return src + ": " + p + "value_shift needs an even number of KV heads, got " + str(cfg.kv_heads);
        });
        require(Lkv % 2 == 0,
                [&] { return src + ": " + p + "value_shift needs an even " + lkv_key + ", got " + str(Lkv); });
    }
    const std::string mode = c.get_string("mode", "encoder");
    require(mode == "encoder" || mode == "decoder",
            [&] { return src + ": mode must be encoder or decoder, got " + detail::quoted(mode); });
    cfg.causal = mode == "decoder";
    cfg.bitnet = c.get_bool("use_bitnet", false);
    cfg.rope_base = c.get_number("rope_base", 10000.0);
    require(cfg.rope_base > 0, [&] { return src + ": rope_base must be positive"; });
    cfg.rotary_dim = cfg.head_dim;
    return cfg;
}

LatentAttentionConfig LatentAttentionConfig::zaya(const ConfigReader &c) {
    const std::string src = c.source();
    LatentAttentionConfig cfg;
    cfg.zaya_names = true;
    require(c.get_string("layer_type", "") != "hybrid_sliding",
            [&] { return src + ": layer_type hybrid_sliding (sliding-window attention) is not supported"; });
    cfg.hidden = c.get_int("hidden_size");
    cfg.heads = c.get_int("num_attention_heads", 8);
    cfg.kv_heads = c.get_int("num_key_value_heads", 2);
    cfg.head_dim = c.get_int("head_dim", 128);
    require(cfg.hidden > 0 && cfg.heads > 0 && cfg.kv_heads > 0 && cfg.head_dim > 0, [&] {
        return src + ": hidden_size, num_attention_heads, num_key_value_heads and head_dim must be positive";
    });
    require(cfg.heads % cfg.kv_heads == 0, [&] {
        return src + ": num_attention_heads (" + str(cfg.heads) + ") must be divisible by num_key_value_heads (" +
               str(cfg.kv_heads) + ")";
    });
    require(cfg.kv_heads * cfg.head_dim % 2 == 0,
            [&] { return src + ": the value halves need an even num_key_value_heads * head_dim"; });
    cfg.num_conv_layers = 2;
    cfg.conv_kernel_seq = c.get_int("cca_time0", 2);
    cfg.conv_kernel_ch = c.get_int("cca_time1", 2);
    require(cfg.conv_kernel_seq >= 1 && cfg.conv_kernel_ch >= 1,
            [&] { return src + ": cca_time0 and cca_time1 must be at least 1"; });
    cfg.qk_mean = true;
    cfg.value_shift = true;
    cfg.causal = true;
    cfg.bias = c.get_bool("attention_bias", false);
    // transformers 5 nests the RoPE keys per layer type ({"hybrid": {...}}); a scaled RoPE is not
    // this layer's (refused).
    const detail::HfRope rope = detail::hf_rope(c, {5e6, 0.5, false, "hybrid"});
    const double factor = rope.partial_rotary_factor;
    require(factor > 0 && factor <= 1,
            [&] { return src + ": partial_rotary_factor must be in (0, 1], got " + std::to_string(factor); });
    cfg.rotary_dim = static_cast<int64_t>(cfg.head_dim * factor);
    require(cfg.rotary_dim >= 2 && cfg.rotary_dim % 2 == 0 && cfg.rotary_dim <= cfg.head_dim, [&] {
        return src + ": head_dim * partial_rotary_factor = " + str(cfg.rotary_dim) + " must be even and in 2..head_dim";
    });
    cfg.rope_base = rope.theta;
    cfg.norm_eps = FLT_EPSILON;
    return cfg;
}

void LatentAttentionConfig::validate() const {
    // The latent cache is a KVCache of Hkv heads of dh values: its int8 groups are the spec's.
    require_supported(storage, "latent attention", true);
    require(storage.kv_dtype != DType::Int8 || head_dim % 4 == 0, [&] {
        return "latent attention: an int8 cache needs a head dimension that is a multiple of 4, got " +
               std::to_string(head_dim);
    });
    require(hidden > 0 && heads > 0 && kv_heads > 0 && head_dim > 0 && heads % kv_heads == 0, [&] {
        return "latent_attention: hidden=" + str(hidden) + " heads=" + str(heads) + " kv_heads=" + str(kv_heads) +
               " head_dim=" + str(head_dim) + ": each must be positive, and heads a multiple of kv_heads";
    });
    require(num_conv_layers >= 0 && num_conv_layers <= 2,
            [&] { return "latent_attention: num_conv_layers must be 0, 1 or 2, got " + str(num_conv_layers); });
    require(conv_kernel_seq >= 1 && conv_kernel_ch >= 1, [&] {
        return "latent_attention: conv_kernel_seq and conv_kernel_ch must be at least 1, got " + str(conv_kernel_seq) +
               " and " + str(conv_kernel_ch);
    });
    // The value shift splits the value latent into a current and a delayed half.
    require(!value_shift || kv_rank() % 2 == 0,
            [&] { return "latent_attention: value_shift needs an even kv_heads * head_dim, got " + str(kv_rank()); });
    require(rotary_dim >= 2 && rotary_dim % 2 == 0 && rotary_dim <= head_dim, [&] {
        return "latent_attention: rotary_dim must be even and in 2..head_dim (" + str(head_dim) + "), got " +
               str(rotary_dim);
    });
    require(std::isfinite(rope_base) && rope_base > 0,
            [&] { return "latent_attention: rope_base must be positive, got " + std::to_string(rope_base); });
    require(std::isfinite(norm_eps) && norm_eps > 0,
            [&] { return "latent_attention: norm_eps must be positive, got " + std::to_string(norm_eps); });
    // ZAYA1's checkpoints have both convolutions and the value shift, and no BitLinear; the seed's
    // modules have no biases.
    require(!zaya_names || (num_conv_layers == 2 && value_shift && !bitnet),
            "latent_attention: ZAYA1's layer has two convolutions, the value shift and no BitLinear");
    require(zaya_names || !bias, "latent_attention: the seed's CCA and CCGQA projections have no biases");
}

LatentAttention::LatentAttention(const LatentAttentionConfig &config, const Weights &w)
    // Validated first: the members below are built from it.
    : config_((config.validate(), config)), rope_(config.rotary_dim, config.rope_base) {
    const int64_t E = config.hidden, P = config.packed(), Lq = config.query_rank(), Lkv = config.kv_rank();
    const int64_t dh = config.head_dim;
    const DType dtype = config.storage.dtype;
    auto bias = [&](const std::string &name, int64_t n) -> std::optional<Tensor> {
        if (!config.bias) return std::nullopt;
        return w.get(name, {n});
    };
    // Dense projections keep 16-bit weights as such (the kernels read them in place).
    const auto dense = [&](Tensor weight, std::optional<Tensor> b) {
        return Linear::dense(std::move(weight), std::move(b), 0.0f, dtype);
    };
    if (config.zaya_names) {
        const int64_t half = Lkv / 2;
        Tensor wq = w.get("qkv_proj.q_proj.weight", {Lq, E}), wk = w.get("qkv_proj.k_proj.weight", {Lkv, E});
        std::optional<Tensor> bqk;
        if (config.bias) bqk = concat_rows(w.get("qkv_proj.q_proj.bias", {Lq}), w.get("qkv_proj.k_proj.bias", {Lkv}));
        qk_ = dense(concat_rows(wq, wk), bqk);
        value_ = dense(w.get("qkv_proj.v_proj_current.weight", {half, E}), bias("qkv_proj.v_proj_current.bias", half));
        value_delayed_ =
            dense(w.get("qkv_proj.v_proj_delayed.weight", {half, E}), bias("qkv_proj.v_proj_delayed.bias", half));
        out_ = dense(w.get("o_proj.weight", {E, Lq}), bias("o_proj.bias", E));
        conv_.w0 = w.get("qkv_proj.conv_qk_depthwise.weight", {P, 1, config.conv_kernel_seq});
        conv_.b0 = w.get("qkv_proj.conv_qk_depthwise.bias", {P});
        conv_.w1_by_output =
            cca_grouped_by_output(w.get("qkv_proj.conv_qk_grouped.weight", {P, dh, config.conv_kernel_ch}));
        conv_.b1 = w.get("qkv_proj.conv_qk_grouped.bias", {P});
        key_scale_ = w.get("qk_norm.temp", {config.kv_heads});
        round_to(dtype, key_scale_.data(), key_scale_.size());
        finish_construction();
        return;
    }
    // With use_bitnet every projection (not the convolutions) is a BitLinear, quantised from the
    // weights as held in the dtype.
    const auto linear = [&](const std::string &name, const Shape &shape) {
        if (!config.bitnet) return dense(w.get(name, shape), std::nullopt);
        Tensor weight = w.get(name, shape);
        round_to(dtype, weight.data(), weight.size());
        return Linear::bitnet(weight);
    };
    qk_ = linear("linear_qk.weight", {P, E});
    if (config.value_shift) {
        value_ = linear("val_proj1.weight", {Lkv / 2, E});
        value_delayed_ = linear("val_proj2.weight", {Lkv / 2, E});
    } else {
        value_ = linear("val_proj.weight", {Lkv, E});
    }
    out_ = linear("out_proj.weight", {E, Lq});
    conv_.w0 = config.num_conv_layers >= 1 ? w.get("conv_qk0.weight", {P, 1, config.conv_kernel_seq})
                                           : identity_depthwise(P);
    conv_.w1_by_output = cca_grouped_by_output(config.num_conv_layers >= 2
                                                   ? w.get("conv_qk1.weight", {P, dh, config.conv_kernel_ch})
                                                   : identity_grouped(P, dh));
    conv_.b0 = Tensor({P});
    conv_.b1 = Tensor({P});
    // The weight is held in the dtype; its exp is float32 math, like the norm it scales.
    const float temp = round_to(dtype, w.get("temp", {1}).data()[0]);
    key_scale_ = Tensor({config.kv_heads}, std::vector<float>(config.kv_heads, std::exp(temp)));
    finish_construction();
}

void LatentAttention::finish_construction() {
    if (config_.value_shift) {
        // Token 0's delayed half is the delayed projection of a zero vector: its bias, or zeros.
        first_value_ = value_delayed_.bias() ? *value_delayed_.bias() : Tensor({config_.kv_rank() / 2});
    }
    // The convolutions' weights are held in the dtype (in float32 tensors, rounded once here).
    for (Tensor *t : {&conv_.w0, &conv_.b0, &conv_.w1_by_output, &conv_.b1}) {
        round_to(config_.storage.dtype, t->data(), t->size());
    }
    // On a GPU the convolution weights, key scales and first value are uploaded once, like the
    // projections'.
    for (Tensor *t : {&conv_.w0, &conv_.b0, &conv_.w1_by_output, &conv_.b1, &key_scale_, &first_value_}) {
        t->keep_on_device(Residency::ReadOnly);
    }
}

void LatentAttention::require_decoder(const char *call) const {
    require(config_.causal, [&] {
        return std::string("latent attention: ") + call + " needs mode decoder: decode is causal by nature";
    });
}

int64_t LatentAttention::weight_bytes() const {
    int64_t floats = key_scale_.size() + first_value_.size();
    for (const Tensor *t : {&conv_.w0, &conv_.b0, &conv_.w1_by_output, &conv_.b1}) floats += t->size();
    return qk_.weight_bytes() + value_.weight_bytes() + value_delayed_.weight_bytes() + out_.weight_bytes() +
           floats * static_cast<int64_t>(sizeof(float));
}

int64_t LatentAttention::cache_bytes_per_token() const {
    // An int8 row (a token's dh values of one KV head) also keeps its float32 scale.
    const int64_t row = config_.head_dim * static_cast<int64_t>(dtype_size(config_.storage.kv_dtype)) +
                        (config_.storage.kv_dtype == DType::Int8 ? static_cast<int64_t>(sizeof(float)) : 0);
    return 2 * config_.kv_heads * row;
}

LatentState LatentAttention::make_state(int64_t batch, int64_t capacity) const {
    require_decoder("make_state");
    // Checks batch and capacity (and, for 16-bit rows, an even head dim).
    KVCache kv(batch, config_.kv_heads, config_.head_dim, capacity, "latent state", config_.storage.kv_dtype);
    return LatentState(identity_, std::move(kv), Tensor({batch, config_.history(), config_.packed()}), first_value_);
}

Tensor LatentAttention::forward(const Tensor &x) const {
    return run(x, nullptr);
}

Tensor LatentAttention::prefill(const Tensor &x, LatentState &state) const {
    require_decoder("prefill");
    return run(x, &state);
}

Tensor LatentAttention::decode_step(const Tensor &x_t, LatentState &state) const {
    require_decoder("decode_step");
    require(x_t.rank() == 3 && x_t.dim(1) == 1, [&] {
        return "latent attention: decode_step takes one token per sequence [B, 1, E], got " +
               shape_to_string(x_t.shape());
    });
    return run(x_t, &state);
}

StoredTensor LatentAttention::forward(const StoredView &x) const {
    return detail::in_dtype(config_.storage.dtype, x, "latent attention: input",
                            [&](const Tensor &x32) { return forward(x32); });
}

StoredTensor LatentAttention::prefill(const StoredView &x, LatentState &state) const {
    return detail::in_dtype(config_.storage.dtype, x, "latent attention: input",
                            [&](const Tensor &x32) { return prefill(x32, state); });
}

StoredTensor LatentAttention::decode_step(const StoredView &x_t, LatentState &state) const {
    return detail::in_dtype(config_.storage.dtype, x_t, "latent attention: decode input",
                            [&](const Tensor &x32) { return decode_step(x32, state); });
}

Tensor LatentAttention::run(const Tensor &x_given, LatentState *state) const {
    const LatentAttentionConfig &c = config_;
    require(x_given.rank() == 3 && x_given.dim(2) == c.hidden, [&] {
        return "latent attention: input " + shape_to_string(x_given.shape()) + " must be [B, S, " + str(c.hidden) + "]";
    });
    detail::require_finite("latent attention: input", x_given);
    const int64_t B = x_given.dim(0), S = x_given.dim(1), P = c.packed(), hist = c.history();
    const int64_t H = c.heads, Hkv = c.kv_heads, dh = c.head_dim, Lkv = c.kv_rank(), half = Lkv / 2;
    if (state) {
        require(state->kv_.batch() == B, [&] {
            return "latent attention: state for batch " + str(state->kv_.batch()) + " does not fit input " +
                   shape_to_string(x_given.shape());
        });
        // Another layer's state would be read and written at the wrong widths (or, without the
        // value shift's row, past its storage); where the widths agree, its rows and first value
        // are still another layer's.
        require(state->maker_ == identity_,
                "latent attention: the state was made by another layer (a layer takes only the states its "
                "make_state made)");
        state->kv_.check_room(S);
    }
    if (S == 0 || B == 0) return Tensor({B, S, c.hidden});  // no tokens: nothing to compute or remember
    // Converted to the dtype once on entry; each kernel result below is rounded to it where stored.
    std::optional<Tensor> copy;
    const Tensor &x = detail::converted_input(c.storage.dtype, x_given, copy);
    const auto stored = [&](Tensor &activation) { detail::store_as(c.storage.dtype, activation); };

    // On a GPU everything between x and y stays on the device (detail::scratch_tensor), and the
    // row moves below are device copies (copy_into): x goes up once, y comes back, and the state's
    // new rows are written on the device and mirrored to the host.
    const detail::ScopedRegion input = detail::upload_once(x);
    const Shape packed_strides{(hist + S) * P, P, 1};

    // 1. Packed down-projection, after the raw history rows the convolutions need (zeros before a
    // sequence's first token).
    Tensor qk = detail::scratch_tensor({B, S, P}), qk_rows = detail::scratch_tensor({B, hist + S, P});
    qk_.apply(x.view(), qk.view());
    stored(qk);
    // Checked where an overflow first appears: the fast-math kernels after it may turn an infinity
    // into any value, finite ones too.
    const auto origin = [&] {
        return detail::magnitudes(x, {{"the qk projection", &qk_}, {"the value projection", &value_},
                                      {"the delayed value projection", &value_delayed_}, {"the output projection", &out_}});
    };
    detail::require_finite_results("latent attention", {{"the qk projection", &qk}}, origin);
    copy_into(qk.view(), TensorView(qk_rows.data() + hist * P, {B, S, P}, packed_strides));
    if (hist > 0) {
        const ConstTensorView history = state ? state->qk_history_.view()
                                              : ConstTensorView(detail::resident_zeros(B * hist * P).data, {B, hist, P});
        copy_into(history, TensorView(qk_rows.data(), {B, hist, P}, packed_strides));
    }
    // 2-6. Convolutions, q-k-mean, norms and RoPE in one kernel.
    const std::vector<int32_t> start = state ? state->kv_.lengths() : std::vector<int32_t>(B, 0);
    std::vector<int32_t> lengths = start;
    for (int32_t &len : lengths) len += static_cast<int32_t>(S);
    const auto rope = rope_.covering(*std::max_element(lengths.begin(), lengths.end()));
    Tensor q = detail::scratch_tensor({B, S, H, dh}), k = detail::scratch_tensor({B, S, Hkv, dh});
    cca_qk_latent(qk_rows.view(), conv_, key_scale_, *rope, start, c.qk_mean, c.norm_eps, q.view(), k.view());
    stored(q);
    stored(k);

    // Values: [current half | previous token's delayed half] per token with value shift.
    Tensor v = detail::scratch_tensor({B, S, Lkv});
    Tensor delayed;
    if (c.value_shift) {
        const Shape row_strides{S * Lkv, Lkv, 1};
        Tensor current = detail::scratch_tensor({B, S, half});
        delayed = detail::scratch_tensor({B, S, half});
        value_.apply(x.view(), current.view());
        value_delayed_.apply(x.view(), delayed.view());
        stored(current);
        stored(delayed);
        copy_into(current.view(), TensorView(v.data(), {B, S, half}, row_strides));
        if (state) {
            copy_into(TensorView(state->prev_value_.data(), {B, 1, half}),
                      TensorView(v.data() + half, {B, 1, half}, row_strides));
        } else {  // new sequences: each starts from the first value
            for (int64_t b = 0; b < B; b++) {
                copy_into(ConstTensorView(first_value_.data(), {1, 1, half}),
                          TensorView(v.data() + b * S * Lkv + half, {1, 1, half}, row_strides));
            }
        }
        if (S > 1) {
            copy_into(TensorView(delayed.data(), {B, S - 1, half}, {S * half, half, 1}),
                      TensorView(v.data() + Lkv + half, {B, S - 1, half}, row_strides));
        }
    } else {
        value_.apply(x.view(), v.view());
        stored(v);
    }
    detail::require_finite_results("latent attention", {{"the values", &v}}, origin);

    // 7. Attention in the latent over the cache (or over the new tokens where they are), then the
    // output projection.
    const ConstTensorView k_tokens(k.data(), {B, S, Hkv, dh}), v_tokens(v.data(), {B, S, Hkv, dh});
    StoredView key_store = tokens_as_cache(k_tokens), value_store = tokens_as_cache(v_tokens);
    if (state) {
        state->kv_.write_past_end(k_tokens, v_tokens);
        key_store = state->kv_.keys();
        value_store = state->kv_.values();
    }
    const float scale = static_cast<float>(1.0 / std::sqrt(double(dh)));
    Tensor attended = detail::scratch_tensor({B, S, H, dh});
    if (S == 1 && c.causal) {
        attention_decode(TensorView(q.data(), {B, H, dh}), key_store, value_store, lengths, scale,
                         TensorView(attended.data(), {B, H, dh}));
    } else {
        attention_prefill(q.view(), key_store, value_store, lengths, scale, c.causal, nullptr, attended.view());
    }
    stored(attended);
    Tensor y({B, S, c.hidden}, Tensor::unset);
    out_.apply(TensorView(attended.data(), {B, S, H * dh}), y.view());
    stored(y);
    if (!state) {
        detail::require_finite_results("latent attention", {{"the output", &y}}, origin);
        return y;
    }
    // The state keeps the new keys and values, the last qk rows and the last delayed value half,
    // which later calls read even where this call's output does not depend on them.
    const Tensor no_delayed;
    detail::require_finite_results("latent attention", {{"the output", &y}, {"the new keys", &k}, {"the new values", &v},
                                                        {"the qk rows", &qk_rows},
                                                        {"the delayed values", c.value_shift ? &delayed : &no_delayed}},
                                   origin);

    // Everything succeeded: the new tokens become part of the state.
    state->kv_.commit(S);
    if (hist > 0) {
        copy_into(TensorView(qk_rows.data() + S * P, {B, hist, P}, packed_strides), state->qk_history_.view());
    }
    if (c.value_shift) {
        copy_into(TensorView(delayed.data() + (S - 1) * half, {B, 1, half}, {S * half, half, 1}),
                  TensorView(state->prev_value_.data(), {B, 1, half}));
    }
    return y;
}

}  // namespace hattn
