#include "bench/support/workloads.h"

#include "hattn/half.h"
#include "hattn/int8_group.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "hattn/device.h"
#include "hattn/error.h"
#include "hattn/kernels/attention.h"
#include "hattn/kernels/bitlinear.h"
#include "hattn/kernels/dsa.h"
#include "hattn/kernels/projection.h"
#include "hattn/kernels/rope.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/layers/dsa_attention.h"
#include "hattn/layers/latent_attention.h"
#include "hattn/safetensors_writer.h"

namespace hattn::bench {

namespace {

Tensor random(const Shape &shape, uint32_t seed, float amplitude = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-amplitude, amplitude);
    Tensor t(shape);
    std::generate_n(t.data(), t.size(), [&] { return u(rng); });
    return t;
}

// On a GPU, inputs stay on the device between runs and the output is left there (the runs time
// the kernel, not the copies); on the CPU this does nothing.
template <typename State>
void keep_on_device(State &st) {
    for (Tensor *t : {&st.q, &st.k, &st.v}) t->keep_on_device(Residency::Mirror);
    st.out.keep_on_device(Residency::DeviceOutput);
}

template <typename State>
Workload make(std::shared_ptr<State> state, std::function<void()> run) {
    Workload w;
    w.run = std::move(run);
    w.state = std::move(state);
    return w;
}

// Random weights written to a checkpoint file and loaded from it, as an application loads its
// own. The file is removed at once: the mapping keeps its data.
Weights checkpoint(const std::map<std::string, Tensor> &tensors) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("hattn-bench-" + std::to_string(std::random_device{}()) + ".safetensors");
    write_safetensors(path.string(), tensors);
    Weights w = Weights::open(path.string());
    std::filesystem::remove(path);
    return w;
}

// The KV heads of an mha or gqa layer: H, or H/4 (at least 1) for gqa, as the peer's
// (spec/cli.md, torch_peer.py); the heads must then group evenly.
int64_t cached_layer_kv_heads(const LayerShape &s) {
    if (s.layer != "gqa") return s.heads;
    const int64_t kv_heads = std::max<int64_t>(1, s.heads / 4);
    require(s.heads % kv_heads == 0, [&] {
        return "bench layer gqa: --heads " + std::to_string(s.heads) + " is not a multiple of its " +
               std::to_string(kv_heads) + " KV heads (H/4)";
    });
    return kv_heads;
}

// A cached attention layer with random weights.
std::unique_ptr<CachedAttention> random_cached_attention(const LayerShape &s) {
    require(s.hidden % s.heads == 0, "bench layer: --hidden must be divisible by --heads");
    CachedAttentionConfig c;
    c.embedding_dimension = s.hidden;
    c.heads = s.heads;
    c.kv_heads = cached_layer_kv_heads(s);
    c.head_dimension = s.hidden / s.heads;
    c.bias = true;
    c.rope_base = 10000.0;
    c.storage = s.storage;
    if (s.window) c.sliding_window = s.window;
    const int64_t E = c.embedding_dimension, q = c.heads * c.head_dimension, kv = c.kv_heads * c.head_dimension;
    const float a = 1.0f / std::sqrt(float(E));
    std::map<std::string, Tensor> w{
        {"query_projection.weight", random({q, E}, 1, a)}, {"query_projection.bias", random({q}, 2, a)},
        {"key_projection.weight", random({kv, E}, 3, a)},  {"key_projection.bias", random({kv}, 4, a)},
        {"value_projection.weight", random({kv, E}, 5, a)}, {"value_projection.bias", random({kv}, 6, a)},
        {"output_projection.weight", random({E, q}, 7, a)}, {"output_projection.bias", random({E}, 8, a)}};
    return std::make_unique<CachedAttention>(c, checkpoint(w));
}

}  // namespace

void warm_up(const std::function<void()> &run) {
    run();
    device_sync();
}

double wall_ms(const std::function<void()> &run) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    device_sync();  // a GPU runs asynchronously: the clock stops when its work has finished
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median_ms(const std::function<void()> &run, int reps) {
    warm_up(run);
    std::vector<double> times;
    for (int i = 0; i < std::max(reps, 1); i++) times.push_back(wall_ms(run));
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// K or V as the kernels read it: t itself in f32, else t's values stored as 16-bit bits, or as
// int8 codes with a scale per row.
struct StoredKv {
    std::vector<uint16_t> bits;
    std::vector<int8_t> codes;
    std::vector<float> scales;
    StoredView view;
};

StoredKv stored_kv(const Tensor &t, DType dtype) {
    StoredKv kv;
    if (dtype == DType::F32) {
        kv.view = t.view();
        return kv;
    }
    if (dtype == DType::Int8) {
        const int64_t D = t.shape().back(), rows = t.size() / D;
        kv.codes.resize(t.size());
        kv.scales.resize(rows);
        for (int64_t r = 0; r < rows; r++) kv.scales[r] = quantize_group(t.data() + r * D, kv.codes.data() + r * D, D);
        kv.view = StoredView(kv.codes.data(), dtype, t.shape(), {});
        kv.view.scales = ConstTensorView(kv.scales.data(), Shape(t.shape().begin(), t.shape().end() - 1));
        return kv;
    }
    kv.bits.resize(t.size());
    to_bits(dtype, t.data(), kv.bits.data(), t.size());
    kv.view = StoredView(kv.bits.data(), dtype, t.shape(), {});
    return kv;
}

Workload prefill_workload(const AttentionShape &s) {
    const int64_t Hkv = s.kv_heads ? s.kv_heads : s.heads;
    struct State {
        Tensor q, k, v, out;
        StoredKv k_stored, v_stored;
        std::vector<int32_t> len;
        std::vector<uint8_t> mask_bytes;
        MaskView mask;
    };
    auto st = std::make_shared<State>();
    if (s.masked) {
        std::mt19937 rng(4);
        st->mask_bytes.resize(s.batch * s.seq * s.seq);
        for (uint8_t &m : st->mask_bytes) m = static_cast<uint8_t>(rng() & 1);
        st->mask = {st->mask_bytes.data(), {s.batch, 1, s.seq, s.seq}};
    }
    st->q = random({s.batch, s.seq, s.heads, s.head_dim}, 1);
    round_to(s.dtype, st->q.data(), st->q.size());
    st->k = random({s.batch, Hkv, s.seq, s.head_dim}, 2);
    st->v = random({s.batch, Hkv, s.seq, s.head_dim}, 3);
    st->out = Tensor({s.batch, s.seq, s.heads, s.head_dim});
    keep_on_device(*st);
    st->k_stored = stored_kv(st->k, s.kv_dtype);
    st->v_stored = stored_kv(st->v, s.kv_dtype);
    st->len.assign(s.batch, static_cast<int32_t>(s.seq));
    const float scale = 1.0f / std::sqrt(float(s.head_dim));
    const bool causal = s.causal;
    const float softcap = s.softcap;
    Workload w = make(st, [st, scale, causal, softcap] {
        attention_prefill(st->q.view(), st->k_stored.view, st->v_stored.view, st->len, scale, causal,
                          st->mask.data ? &st->mask : nullptr, st->out.view(), nullptr, softcap);
    });
    w.flops = 4.0 * s.batch * s.heads * double(s.seq) * s.seq * s.head_dim * (s.causal ? 0.5 : 1.0);
    return w;
}

Workload decode_workload(const AttentionShape &s) {
    const int64_t Hkv = s.kv_heads ? s.kv_heads : s.heads;
    struct State {
        Tensor q, k, v, out;
        StoredKv k_stored, v_stored;
        std::vector<int32_t> len;
    };
    auto st = std::make_shared<State>();
    st->q = random({s.batch, s.heads, s.head_dim}, 1);
    round_to(s.dtype, st->q.data(), st->q.size());
    const int64_t capacity = std::max(s.capacity, s.kv_len);
    st->k = random({s.batch, Hkv, capacity, s.head_dim}, 2);
    st->v = random({s.batch, Hkv, capacity, s.head_dim}, 3);
    st->out = Tensor({s.batch, s.heads, s.head_dim});
    keep_on_device(*st);
    st->k_stored = stored_kv(st->k, s.kv_dtype);
    st->v_stored = stored_kv(st->v, s.kv_dtype);
    if (s.kv_dtype != DType::F32) st->k = st->v = Tensor();  // only the stored copies are read
    st->len.assign(s.batch, static_cast<int32_t>(s.kv_len));
    const float scale = 1.0f / std::sqrt(float(s.head_dim));
    const float softcap = s.softcap;
    Workload w = make(st, [st, scale, softcap] {
        attention_decode(st->q.view(), st->k_stored.view, st->v_stored.view, st->len, scale, st->out.view(), nullptr,
                         nullptr, softcap);
    });
    // Bytes as stored: an int8 row's codes and its float32 scale.
    const double row_bytes = s.head_dim * double(dtype_size(s.kv_dtype)) + (s.kv_dtype == DType::Int8 ? 4 : 0);
    w.bytes = 2.0 * s.batch * Hkv * double(s.kv_len) * row_bytes;
    return w;
}

Workload projection_workload(int64_t rows, int64_t in, int64_t out, DType weights) {
    struct State {
        Tensor x, w, b, y;
        StoredKv w_stored;
    };
    auto st = std::make_shared<State>();
    // The weight first: a shape too large for memory fails before any other tensor is filled.
    st->w = random({out, in}, 2);
    st->x = random({rows, in}, 1);
    st->b = random({out}, 3);
    st->y = Tensor({rows, out});
    st->w_stored = stored_kv(st->w, weights);
    if (weights != DType::F32) st->w = Tensor();
    Workload w = make(st, [st] {
        const ConstTensorView bias = st->b.view();
        project(st->x.view(), st->w_stored.view, &bias, st->y.view());
    });
    w.flops = 2.0 * rows * in * out;
    w.bytes = double(dtype_size(weights)) * in * out;  // the weights dominate
    return w;
}

Workload bitlinear_workload(int64_t rows, int64_t in, int64_t out) {
    struct State {
        Tensor x, y;
        PackedTernary w;
    };
    auto st = std::make_shared<State>();
    st->w = pack_ternary(random({out, in}, 2));  // first, as above
    st->x = random({rows, in}, 1);
    st->y = Tensor({rows, out});
    Workload w = make(st, [st] { bitlinear(st->x.view(), st->w, st->y.view()); });
    w.flops = 2.0 * rows * in * out;
    w.bytes = double(st->w.bytes());
    return w;
}

namespace {

// Distinct random keys per query among its causal prefix (or only its last `window` tokens),
// ascending: what the layer's top-k hands over. [seq, topk], -1 where a query has fewer keys.
std::vector<int32_t> random_topk(int64_t seq, int64_t topk, int64_t window = 0) {
    std::vector<int32_t> indices(seq * topk, -1);
    std::mt19937 rng(4);
    for (int64_t s = 0; s < seq; s++) {
        const int64_t first = window ? std::max<int64_t>(0, s + 1 - window) : 0;
        std::vector<int32_t> keys(s + 1 - first);
        std::iota(keys.begin(), keys.end(), static_cast<int32_t>(first));
        const int64_t n = std::min<int64_t>(topk, keys.size());
        for (int64_t i = 0; i < n; i++) {
            std::swap(keys[i], keys[std::uniform_int_distribution<int64_t>(i, keys.size() - 1)(rng)]);
        }
        std::sort(keys.begin(), keys.begin() + n);
        std::copy_n(keys.begin(), n, indices.begin() + s * topk);
    }
    return indices;
}

}  // namespace

Workload dsa_sparse_workload(int64_t seq, int64_t topk) {
    constexpr int64_t H = 16, Dk = 192, Dv = 128;
    struct State {
        Tensor q, k, v, out;
        std::vector<int32_t> indices;
    };
    auto st = std::make_shared<State>();
    st->q = random({1, seq, H, Dk}, 1);
    st->k = random({1, seq, H, Dk}, 2);
    st->v = random({1, seq, H, Dv}, 3);
    st->out = Tensor({1, seq, H, Dv});
    st->indices = random_topk(seq, topk);
    const float scale = 1.0f / std::sqrt(float(Dk));
    Workload w = make(st, [st, topk, scale] {
        dsa_sparse_attention(st->q.view(), st->k.view(), st->v.view(), st->indices, topk, scale, st->out.view());
    });
    w.flops = 2.0 * seq * topk * H * (Dk + Dv);
    return w;
}

Workload dsa_sparse_latent_workload(int64_t seq, int64_t topk, int64_t window, int64_t queries) {
    constexpr int64_t H = 16, R = 512, L = 576;  // L = R + Rd: one latent row serves every head
    struct State {
        Tensor q, latent, out;
        std::vector<int32_t> indices;
    };
    const int64_t S = queries > 0 ? std::min(queries, seq) : seq;
    auto st = std::make_shared<State>();
    st->q = random({1, S, H, L}, 1);
    st->latent = random({1, seq, L}, 2);
    st->out = Tensor({1, S, H, R});
    st->indices = random_topk(seq, topk, window);
    st->indices.erase(st->indices.begin(), st->indices.end() - S * topk);
    const float scale = 1.0f / std::sqrt(192.0f);
    Workload w = make(st, [st, seq, topk, scale] {
        const ConstTensorView latent(st->latent.data(), {1, seq, R}, {seq * L, L, 1}),
            rotary(st->latent.data() + R, {1, seq, L - R}, {seq * L, L, 1});
        dsa_latent_attention(st->q.view(), latent, rotary, st->indices, topk, scale, st->out.view());
    });
    w.flops = 2.0 * S * topk * H * (L + R);
    return w;
}

Workload dsa_index_workload(int64_t seq, int64_t queries) {
    constexpr int64_t IH = 32, ID = 128;
    static constexpr int64_t block = 256;
    const int64_t Q = queries > 0 ? queries : seq;  // the last Q of the seq tokens
    struct State {
        Tensor iq, ik, w, scores;
    };
    auto st = std::make_shared<State>();
    st->iq = random({1, Q, IH, ID}, 1);
    st->ik = random({1, seq, ID}, 2);
    st->w = random({1, Q, IH}, 3);
    st->scores = Tensor({1, std::min(block, Q), seq});
    const float scale = 1.0f / std::sqrt(float(ID));
    Workload w = make(st, [st, seq, Q, scale] {
        for (int64_t s0 = 0; s0 < Q; s0 += block) {
            const int64_t n = std::min(block, Q - s0);
            dsa_index_scores(TensorView(st->iq.data() + s0 * IH * ID, {1, n, IH, ID}), st->ik.view(),
                             TensorView(st->w.data() + s0 * IH, {1, n, IH}), {static_cast<int32_t>(seq - Q + s0 + n)},
                             scale, TensorView(st->scores.data(), {1, n, seq}));
        }
    });
    // Every (query, key) pair of the cache counts, the ones past a query's position (scored in its
    // block, then masked) too: for a prefill about half.
    w.flops = 2.0 * Q * seq * IH * ID;
    return w;
}

Workload rope_workload(int64_t batch, int64_t seq, int64_t heads, int64_t head_dim) {
    struct State {
        Tensor x, y;
        std::unique_ptr<RopeTable> table;
        std::vector<int32_t> start;
    };
    auto st = std::make_shared<State>();
    st->x = random({batch, seq, heads, head_dim}, 1);
    st->y = Tensor(st->x.shape());
    st->table = std::make_unique<RopeTable>(head_dim, 10000.0, seq);
    st->start.assign(batch, 0);
    Workload w = make(st, [st] { apply_rope(st->x.view(), *st->table, st->start, st->y.view()); });
    w.bytes = 8.0 * st->x.size();
    return w;
}

namespace {

// A seed CCA / CCGQA layer (decoder mode, the seed's defaults) with random weights.
std::unique_ptr<LatentAttention> random_latent_attention(const LayerShape &s) {
    const bool grouped = s.layer == "ccgqa";
    // The seed's defaults derive the rest from --hidden and --heads; the message says so.
    const std::string source = "bench layer " + s.layer + " --hidden " + std::to_string(s.hidden) + " --heads " +
                               std::to_string(s.heads) + " (the seed's defaults for the rest)";
    LatentAttentionConfig c = LatentAttentionConfig::cca(
        ConfigReader::parse(
            nlohmann::json{{"hidden_size", s.hidden}, {"num_heads", s.heads}, {"mode", "decoder"}}.dump(), source),
        grouped);
    c.storage = s.storage;
    const int64_t E = c.hidden, P = c.packed(), Lq = c.query_rank(), Lkv = c.kv_rank();
    const float a = 1.0f / std::sqrt(float(E));
    std::map<std::string, Tensor> w{{"linear_qk.weight", random({P, E}, 1, a)},
                                    {"val_proj1.weight", random({Lkv / 2, E}, 2, a)},
                                    {"val_proj2.weight", random({Lkv / 2, E}, 3, a)},
                                    {"out_proj.weight", random({E, Lq}, 4, a)},
                                    {"conv_qk0.weight", random({P, 1, c.conv_kernel_seq}, 5, 0.5f)},
                                    {"conv_qk1.weight", random({P, c.head_dim, c.conv_kernel_ch}, 6, 0.2f)},
                                    {"temp", random({1}, 7, 0.1f)}};
    return std::make_unique<LatentAttention>(c, checkpoint(w));
}

bool is_latent(const std::string &layer) { return layer == "cca" || layer == "ccgqa"; }

// A GLM-5-shaped sparse attention layer scaled to E and H, with random weights: q_lora E/3, latent
// 512, head dims 128 + 64 (rope) and 128 (values), 32 index heads of 128, top-2048.
DsaConfig dsa_config(const LayerShape &s) {
    const nlohmann::json config = {{"hidden_size", s.hidden}, {"num_attention_heads", s.heads},
                                   {"q_lora_rank", std::max<int64_t>(64, s.hidden / 3)}, {"kv_lora_rank", 512},
                                   {"qk_nope_head_dim", 128}, {"qk_rope_head_dim", 64}, {"v_head_dim", 128},
                                   {"index_n_heads", 32}, {"index_head_dim", 128}, {"index_topk", 2048}};
    DsaConfig c = DsaConfig::from(ConfigReader::parse(config.dump(), "bench"));
    c.storage = s.storage;
    return c;
}

std::unique_ptr<DsaAttention> random_dsa_attention(const LayerShape &s) {
    const DsaConfig c = dsa_config(s);
    const int64_t E = c.hidden, H = c.heads, QL = c.q_lora_rank, R = c.kv_lora_rank;
    const float a = 1.0f / std::sqrt(float(E));
    std::map<std::string, Tensor> w{
        {"q_a_proj.weight", random({QL, E}, 1, a)},
        {"q_a_layernorm.weight", random({QL}, 2, 1.0f)},
        {"q_b_proj.weight", random({H * (c.nope_dim + c.rope_dim), QL}, 3, 1.0f / std::sqrt(float(QL)))},
        {"kv_a_proj_with_mqa.weight", random({R + c.rope_dim, E}, 4, a)},
        {"kv_a_layernorm.weight", random({R}, 5, 1.0f)},
        {"kv_b_proj.weight", random({H * (c.nope_dim + c.v_dim), R}, 6, 1.0f / std::sqrt(float(R)))},
        {"o_proj.weight", random({E, H * c.v_dim}, 7, a)},
        {"indexer.wq_b.weight", random({c.index_heads * c.index_dim, QL}, 8, 1.0f / std::sqrt(float(QL)))},
        {"indexer.wk.weight", random({c.index_dim, E}, 9, a)},
        {"indexer.k_norm.weight", random({c.index_dim}, 10, 1.0f)},
        {"indexer.k_norm.bias", random({c.index_dim}, 11, 0.1f)},
        {"indexer.weights_proj.weight", random({c.index_heads, E}, 12, a)}};
    return std::make_unique<DsaAttention>(c, checkpoint(w));
}

}  // namespace


namespace {

// Times one layer: its whole-sequence call on S random tokens, or (decode) one token after
// `filled` has put kv_len tokens in a cache of room kv_len + 1; `rewind` brings the cache back to
// kv_len after each run, so every run sees the same cache length.
template <typename Layer, typename Cache>
Workload layer_run(const LayerShape &s, std::unique_ptr<Layer> layer,
                   std::function<void(Layer &, const Tensor &)> whole,
                   std::function<Cache(Layer &)> filled,
                   std::function<void(Layer &, const Tensor &, Cache &)> step,
                   std::function<void(Cache &)> rewind) {
    struct State {
        std::unique_ptr<Layer> layer;
        std::unique_ptr<Cache> cache;
        Tensor x;
    };
    auto st = std::make_shared<State>();
    st->layer = std::move(layer);
    const double cache_bytes_per_token = double(st->layer->cache_bytes_per_token());
    if (!s.decode) {
        st->x = random({s.batch, s.seq, s.hidden}, 9);
        Workload w = make(st, [st, whole] { whole(*st->layer, st->x); });
        w.tokens = double(s.batch) * s.seq;
        w.cache_bytes_per_token = cache_bytes_per_token;
        return w;
    }
    require(s.kv_len > 0, "bench layer --decode: --kv-len must be positive");
    st->cache = std::make_unique<Cache>(filled(*st->layer));
    st->x = random({s.batch, 1, s.hidden}, 12);
    Workload w = make(st, [st, step, rewind] {
        step(*st->layer, st->x, *st->cache);
        rewind(*st->cache);
    });
    w.tokens = double(s.batch);
    w.cache_bytes_per_token = cache_bytes_per_token;
    w.bytes = cache_bytes_per_token * s.batch * (s.window ? std::min(s.kv_len, s.window) : s.kv_len);
    return w;
}

// kv_len random keys and values, [B, kv_len, Hkv, D], appended to `cache`.
void fill_random(KVCache &cache, int64_t kv_len) {
    const Tensor k = random({cache.batch(), kv_len, cache.kv_heads(), cache.head_dim()}, 10);
    const Tensor v = random({cache.batch(), kv_len, cache.kv_heads(), cache.head_dim()}, 11);
    cache.append(k.view(), v.view());
}

Workload latent_layer_workload(const LayerShape &s) {
    const int64_t B = s.batch, T = s.kv_len;
    return layer_run<LatentAttention, LatentState>(
        s, random_latent_attention(s), [](LatentAttention &l, const Tensor &x) { l.forward(x); },
        [B, T](LatentAttention &l) {
            LatentState state = l.make_state(B, T + 1);
            fill_random(state.kv_without_history(), T);
            return state;
        },
        [](LatentAttention &l, const Tensor &x, LatentState &state) { l.decode_step(x, state); },
        [T](LatentState &state) { state.kv_without_history().truncate_to(T); });
}

Workload dsa_layer_workload(const LayerShape &s) {
    const int64_t B = s.batch, T = s.kv_len, E = s.hidden;
    return layer_run<DsaAttention, DsaState>(
        s, random_dsa_attention(s), [](DsaAttention &l, const Tensor &x) { l.forward(x); },
        [B, T, E](DsaAttention &l) {
            // Filled by prefills of kv_len random tokens (the indexer needs real keys), in blocks
            // whose queries each select only their own token: a state's rows do not depend on the
            // selection, so a long prompt's attention and indexer are skipped (docs/perf/log.md,
            // "The DSA state in its storage types").
            DsaState state = l.make_state(B, T + 1);
            constexpr int64_t block = 2048;
            for (int64_t t0 = 0; t0 < T; t0 += block) {
                const int64_t n = std::min(block, T - t0);
                TopK self{B, n, 1, std::vector<int32_t>(B * n)};
                for (int64_t i = 0; i < B * n; i++) self.indices[i] = static_cast<int32_t>(t0 + i % n);
                l.prefill(random({B, n, E}, 10 + static_cast<uint32_t>(t0 / block)), state, nullptr, &self);
            }
            return state;
        },
        [](DsaAttention &l, const Tensor &x, DsaState &state) { l.decode_step(x, state); },
        [T](DsaState &state) { state.truncate_to(T); });
}

Workload cached_layer_workload(const LayerShape &s) {
    const int64_t B = s.batch, T = s.kv_len;
    return layer_run<CachedAttention, KVCache>(
        s, random_cached_attention(s), [](CachedAttention &l, const Tensor &x) { l.self_attention(x); },
        [B, T](CachedAttention &l) {
            KVCache cache = l.make_cache(B, T + 1);
            fill_random(cache, T);
            return cache;
        },
        [](CachedAttention &l, const Tensor &x, KVCache &cache) { l.decode_step(x, cache); },
        [T](KVCache &cache) { cache.truncate_to(T); });
}

}  // namespace

Workload layer_workload(const LayerShape &s) {
    require(!s.window || s.layer == "mha" || s.layer == "gqa", "bench layer: --window is for mha and gqa layers");
    if (is_latent(s.layer)) return latent_layer_workload(s);
    if (s.layer == "dsa") return dsa_layer_workload(s);
    require(s.layer == "mha" || s.layer == "gqa",
            "bench layer: unknown layer '" + s.layer + "' (mha, gqa, cca, ccgqa, dsa)");
    return cached_layer_workload(s);
}

}  // namespace hattn::bench
