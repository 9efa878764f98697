// GLM-5 sparse attention (hattn::DsaAttention): configuration, top-k bookkeeping, shared indices,
// each attention form against the float64 reference, and decode (absorbed, in the latent) against
// the whole-sequence forward (on a CPU dense or absorbed, on a GPU expanded: the GPU tests run it
// on PoCL), also in 16-bit storage types. The golden cases compare the layer with an independent
// float64 implementation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <random>

#include "device_residency.h"
#include "kernel_variants.h"
#include "hattn/device.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/kernels/attention.h"
#include "hattn/kernels/dsa.h"
#include "hattn/layers/dsa_attention.h"
#include "hattn/stored_tensor.h"
#include "hattn/safetensors_writer.h"
#include "reference/dsa_attention.h"
#include "support/compare.h"
#include "support/config_changes.h"
#include "support/errors.h"
#include "support/config.h"
#include "support/stateful_layer.h"
#include "support/dot_forms.h"
#include "support/kernels_ran.h"
#include "support/kernel_checks.h"
#include "support/device.h"
#include "support/random.h"
#include "support/temp_dir.h"

namespace hattn {
namespace {

nlohmann::json small_config(int64_t topk) {
    return {{"hidden_size", 64},      {"num_attention_heads", 4}, {"q_lora_rank", 48},
            {"kv_lora_rank", 32},     {"qk_nope_head_dim", 16},   {"qk_rope_head_dim", 8},
            {"v_head_dim", 16},       {"index_n_heads", 3},       {"index_head_dim", 16},
            {"index_topk", topk},     {"rope_theta", 10000.0},    {"num_hidden_layers", 78}};
}

DsaAttention make_layer(const nlohmann::json &json, const std::string &prefix = "", bool zero_index_weights = false,
                        std::map<std::string, Tensor> *weights = nullptr, StorageTypes storage = {}) {
    DsaConfig c = DsaConfig::from(testing::config_of(json));
    c.storage = storage;
    const int64_t E = c.hidden, H = c.heads;
    auto t = [](Shape s, uint32_t seed) {
        Tensor x = testing::random_tensor(s, seed);
        for (int64_t i = 0; i < x.size(); i++) x.data()[i] *= 0.3f;
        return x;
    };
    std::map<std::string, Tensor> w{
        {"q_a_proj.weight", t({c.q_lora_rank, E}, 1)},
        {"q_a_layernorm.weight", t({c.q_lora_rank}, 2)},
        {"q_b_proj.weight", t({H * (c.nope_dim + c.rope_dim), c.q_lora_rank}, 3)},
        {"kv_a_proj_with_mqa.weight", t({c.kv_lora_rank + c.rope_dim, E}, 4)},
        {"kv_a_layernorm.weight", t({c.kv_lora_rank}, 5)},
        {"kv_b_proj.weight", t({H * (c.nope_dim + c.v_dim), c.kv_lora_rank}, 6)},
        {"o_proj.weight", t({E, H * c.v_dim}, 7)},
        {"indexer.wq_b.weight", t({c.index_heads * c.index_dim, c.q_lora_rank}, 8)},
        {"indexer.wk.weight", t({c.index_dim, E}, 9)},
        {"indexer.k_norm.weight", t({c.index_dim}, 10)},
        {"indexer.k_norm.bias", t({c.index_dim}, 11)},
        {"indexer.weights_proj.weight", t({c.index_heads, E}, 12)}};
    if (zero_index_weights) w["indexer.weights_proj.weight"] = Tensor({c.index_heads, E});  // every score 0
    if (c.bias) {
        w["q_a_proj.bias"] = t({c.q_lora_rank}, 13);
        w["kv_a_proj_with_mqa.bias"] = t({c.kv_lora_rank + c.rope_dim}, 14);
        w["o_proj.bias"] = t({E}, 15);
    }
    if (weights) *weights = w;
    std::map<std::string, Tensor> named;
    for (auto &[name, tensor] : w) named[prefix + name] = tensor;
    testing::TempDir dir;
    write_safetensors(dir.file("w.safetensors"), named);
    return DsaAttention(c, Weights::open(dir.file("w.safetensors"), prefix));
}

// A state's stored rows [B, capacity, width] widened to float32 on the host.
Tensor widened(const StoredView &rows) {
    Tensor t(rows.shape);
    widen_into(rows, t.view());
    return t;
}

// The layer against the float64 reference of the spec: top-k below and above the length, several
// index-head shapes, batch 2, biases.
TEST(DsaAttention, ForwardMatchesTheFloat64Reference) {
    struct Case {
        int64_t topk, index_heads, index_dim;
        bool bias;
    };
    for (const Case &k : {Case{4, 3, 16, false}, Case{64, 3, 16, true}, Case{5, 1, 8, false}, Case{6, 8, 32, true}}) {
        nlohmann::json config = small_config(k.topk);
        config["index_n_heads"] = k.index_heads;
        config["index_head_dim"] = k.index_dim;
        config["attention_bias"] = k.bias;
        std::map<std::string, Tensor> w;
        DsaAttention layer = make_layer(config, "", false, &w);
        const Tensor x = testing::random_tensor({2, 11, 64}, 27);
        const reference::DsaShape shape{64, 4, 48, 32, 16, 8, 16, k.index_heads, k.index_dim, k.topk, 10000.0, 1e-6};
        EXPECT_LE(testing::relative_l2(layer.forward(x), reference::dsa_attention(shape, w, x)), 1e-4)
            << "topk " << k.topk << ", " << k.index_heads << " index heads of " << k.index_dim;
    }
}

TEST(DsaAttention, DecodeInTheLatentEqualsTheForward) {
    for (int64_t topk : {4, 64}) {  // below and above the length
        DsaAttention layer = make_layer(small_config(topk), "model.layers.3.self_attn.");
        const Tensor x = testing::random_tensor({2, 10, 64}, 20);
        TopK forward_sel;
        const Tensor expected = layer.forward(x, &forward_sel);
        DsaState state = layer.make_state(2, 10);
        Tensor out({2, 10, 64});
        TopK sel;
        const Tensor first = layer.prefill(x.tokens(0, 5), state, &sel);
        for (int64_t b = 0; b < 2; b++) std::copy_n(first.data() + b * 5 * 64, 5 * 64, out.data() + b * 10 * 64);
        for (int64_t s = 5; s < 10; s++) {
            const Tensor y = layer.decode_step(x.tokens(s, s + 1), state, &sel);
            for (int64_t b = 0; b < 2; b++) {
                std::copy_n(y.data() + b * 64, 64, out.data() + (b * 10 + s) * 64);
                // Decode scores each key exactly as the forward did, so it selects the same keys.
                EXPECT_TRUE(std::equal(sel.row(b, 0), sel.row(b, 0) + sel.k, forward_sel.row(b, s)))
                    << "topk " << topk << " query " << s;
            }
        }
        EXPECT_LE(testing::relative_l2(out, {expected.values().begin(), expected.values().end()}), 1e-5)
            << "topk " << topk;
    }
}

// ---------------------------------------------------------------- storage types (spec section 5)

// Prefill + decode in 16-bit types equals the forward within the type's precision: with top-64 the
// forward attends densely over the expanded keys, rounding other values than decode's latent form
// does; with top-4 it attends in the latent too. The bf16 output differs from the f32 one: the
// rounding happens. Outputs are returned in the dtype.
TEST(DsaAttention, SixteenBitDecodeEqualsTheForwardWithinTheTypesPrecision) {
    const int64_t S = 24, P = 9;  // tokens, and the prefill's
    const Tensor x = testing::random_tensor({2, S, 64}, 90);
    for (int64_t topk : {4, 64}) {
        const Tensor y32 = make_layer(small_config(topk)).forward(x);
        for (const auto &[dtype, tolerance] : {std::pair{DType::BF16, 2e-2}, {DType::F16, 3e-3}}) {
            SCOPED_TRACE(std::string(type_name(dtype)) + ", topk " + std::to_string(topk));
            const DsaAttention layer = make_layer(small_config(topk), "", false, nullptr, {dtype, dtype});
            EXPECT_EQ(layer.storage_types().dtype, dtype);
            const Tensor expected = layer.forward(x);
            DsaState state = layer.make_state(2, S);
            Tensor out({2, S, 64});
            const Tensor first = layer.prefill(x.tokens(0, P), state);
            for (int64_t b = 0; b < 2; b++) std::copy_n(first.data() + b * P * 64, P * 64, out.data() + b * S * 64);
            for (int64_t s = P; s < S; s++) {
                const Tensor y = layer.decode_step(x.tokens(s, s + 1), state);
                for (int64_t b = 0; b < 2; b++) std::copy_n(y.data() + b * 64, 64, out.data() + (b * S + s) * 64);
            }
            EXPECT_LE(testing::relative_l2(out, expected), tolerance);
            for (float v : out.values()) {
                ASSERT_EQ(round_to(dtype, v), v);
            }
            if (dtype == DType::BF16) {
                EXPECT_GT(testing::relative_l2(expected, y32), 1e-4);
            }
        }
    }
}

// The calls over typed activations: a caller's bf16 memory in, the output in the layer's dtype,
// bit for bit the float32 calls' over the same values, with the same keys selected.
TEST(DsaAttention, TypedCallsReturnTheDtype) {
    const DsaAttention layer = make_layer(small_config(4), "", false, nullptr, {DType::BF16, DType::BF16});
    const StoredTensor x = StoredTensor::rounded(DType::BF16, testing::random_tensor({2, 10, 64}, 98).view());
    const Tensor x32 = x.widened();
    TopK typed_keys, plain_keys;
    const StoredTensor y = layer.forward(x.view(), &typed_keys);
    EXPECT_EQ(y.dtype(), DType::BF16);
    EXPECT_EQ(y.bytes(), y.size() * 2);
    EXPECT_EQ(testing::relative_l2(y.widened(), layer.forward(x32, &plain_keys)), 0.0);
    EXPECT_EQ(typed_keys.indices, plain_keys.indices);
    DsaState typed = layer.make_state(2, 10), plain = layer.make_state(2, 10);
    EXPECT_EQ(testing::relative_l2(layer.prefill(x.view().crop(1, 0, 9), typed).widened(), layer.prefill(x32.tokens(0, 9), plain)),
              0.0);
    EXPECT_EQ(testing::relative_l2(layer.decode_step(x.view().crop(1, 9, 10), typed).widened(),
                                   layer.decode_step(x32.tokens(9, 10), plain)),
              0.0);
}

// A bf16 layer's indexer multiplies bf16 pairs where they run (its queries are bf16 values): in
// forward and decode alike, so both select the same keys; float32 queries over bf16 keys widen.
TEST(DsaAttention, ABf16IndexerTakesPairsInForwardAndDecode) {
    const bool pairs_here = testing::with_bf16_form(Bf16DotForm::Pairs, [] {
        return double(current_device() == Device::CPU && detail::bf16_pairs_chosen());
    });
    if (!pairs_here) GTEST_SKIP() << "no bf16 pairs kernels here";
    const auto has = [](const std::vector<std::string> &names, const std::string &name) {
        return std::find(names.begin(), names.end(), name) != names.end();
    };
    testing::with_bf16_form(Bf16DotForm::Pairs, [&] {
        // 300 queries of 2 sequences: the indexer's second block of 256 is a strided view.
        const int64_t S = 300;
        const DsaAttention layer = make_layer(small_config(4), "", false, nullptr, {DType::BF16, DType::BF16});
        const Tensor x = testing::random_tensor({2, S, 64}, 94);
        TopK whole, step;
        const std::vector<std::string> forward = testing::kernels_ran([&] { layer.forward(x, &whole); });
        EXPECT_TRUE(has(forward, "dsa_index_scores_bf16_pairs"));
        EXPECT_FALSE(has(forward, "dsa_index_scores_bf16"));
        DsaState state = layer.make_state(2, S);
        layer.prefill(x.tokens(0, S - 1), state);
        const std::vector<std::string> decode = testing::kernels_ran([&] { layer.decode_step(x.tokens(S - 1, S), state, &step); });
        EXPECT_TRUE(has(decode, "dsa_index_scores_bf16_pairs"));
        // The absorbed logits too: their queries (q_abs) are a bf16 layer's activations.
        EXPECT_TRUE(has(decode, "dsa_latent_attention_bf16_bf16_pairs"));
        for (int64_t b = 0; b < 2; b++) {
            EXPECT_EQ(std::vector<int32_t>(step.row(b, 0), step.row(b, 0) + 4),
                      std::vector<int32_t>(whole.row(b, S - 1), whole.row(b, S - 1) + 4))
                << "sequence " << b;
        }
        return 0.0;
    });
    // The same keys under float32 queries: the widening kernel.
    StoredRows keys(DType::BF16, 1, 8, 16);
    keys.store(0, 0, testing::random_tensor({8, 16}, 95).view());
    Tensor scores({1, 2, 8});
    EXPECT_EQ(testing::only_kernel_ran([&] {
                  testing::with_bf16_form(Bf16DotForm::Pairs, [&] {
                      dsa_index_scores(testing::random_tensor({1, 2, 3, 16}, 96).view(), keys.view(),
                                       testing::random_tensor({1, 2, 3}, 97).view(), {8}, 0.25f, scores.view());
                      return 0.0;
                  });
              }),
              "dsa_index_scores_bf16");
}

// An int8 state: each token's R latent values in groups of 128 (here R = 32: one group) are held as
// codes and a scale, the largest value's code 127, and decoding through it stays within the golden
// kvint8 cases' 4e-2 of the float32 forward. The bytes per token are the spec's: the codes and a
// scale, the rotary part and the indexer keys in float32.
TEST(DsaAttention, Int8StateHoldsCodesTimesAScalePerGroup) {
    const DsaAttention layer = make_layer(small_config(64), "", false, nullptr, {DType::F32, DType::Int8});
    EXPECT_EQ(layer.cache_bytes_per_token(), 32 + 4 + (8 + 16) * 4);
    const Tensor x = testing::random_tensor({1, 12, 64}, 92);
    DsaState state = layer.make_state(1, 12);
    layer.prefill(x.tokens(0, 5), state);
    const StoredView latent = state.latent();
    ASSERT_EQ(latent.dtype, DType::Int8);
    ASSERT_EQ(latent.scales.shape, Shape({1, 12, 1}));
    EXPECT_EQ(state.rotary_keys().dtype, DType::F32);
    EXPECT_EQ(state.index_keys().dtype, DType::F32);
    for (int64_t t = 0; t < 5; t++) {
        const int8_t *codes = static_cast<const int8_t *>(latent.data) + t * latent.strides[1];
        int largest = 0;
        for (int64_t i = 0; i < 32; i++) largest = std::max(largest, std::abs(int(codes[i])));
        EXPECT_EQ(largest, 127) << "token " << t;
        EXPECT_GT(latent.scales.data[t], 0.0f) << "token " << t;
    }
    layer.prefill(x.tokens(5, 6), state);
    std::vector<float> rest;
    for (int64_t s = 6; s < 12; s++) {
        const Tensor y = layer.decode_step(x.tokens(s, s + 1), state);
        rest.insert(rest.end(), y.values().begin(), y.values().end());
    }
    const Tensor whole = make_layer(small_config(64)).forward(x);
    const std::vector<double> expected(whole.values().begin() + 6 * 64, whole.values().end());
    EXPECT_LE(testing::relative_l2(Tensor({1, 6, 64}, rest), expected), 4e-2);
    EXPECT_GT(testing::relative_l2(Tensor({1, 6, 64}, rest), expected), 1e-5);  // the codes are read
}

// An int8 latent of R = 300 values: groups of 128, 128 and 44, each with a scale of its own, so a
// group with an outlier (100 times the rest) bounds the error to that group.
TEST(DsaState, Int8LatentGroupsOf128HaveAScaleEach) {
    StoredRows rows(DType::Int8, 1, 2, 300, DsaState::int8_group);
    Tensor x = testing::random_tensor({2, 300}, 93);
    x.data()[5] = 100.0f;  // first row, first group
    for (int64_t t = 0; t < 2; t++) rows.store(0, t, ConstTensorView(x.data() + t * 300, {1, 300}));
    EXPECT_EQ(rows.bytes_per_row(), 300 + 3 * 4);
    const StoredView v = rows.view();
    ASSERT_EQ(v.scales.shape, Shape({1, 2, 3}));
    const Tensor back = widened(v);
    for (int64_t t = 0; t < 2; t++)
        for (int64_t g = 0; g < 3; g++) {
            double error = 0, largest = 0;
            for (int64_t i = g * 128; i < std::min<int64_t>(300, (g + 1) * 128); i++) {
                error = std::max(error, std::fabs(double(back.data()[t * 300 + i]) - x.data()[t * 300 + i]));
                largest = std::max(largest, std::fabs(double(x.data()[t * 300 + i])));
            }
            EXPECT_LE(error, largest / 127 / 2 * 1.0001) << "token " << t << ", group " << g;
            // Only the outlier's group is coarse.
            EXPECT_EQ(error > 0.05, t == 0 && g == 0) << "token " << t << ", group " << g;
        }
}

// Rows of widths that do not fill whole words (padded), in every type: stored values read back as
// their rounding (int8: within half a step of the row's scale), and copied between sequences of
// states of other capacities, scales with their codes.
TEST(DsaState, StoredRowsOfOddWidthsRoundAndMove) {
    for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::Int8}) {
        SCOPED_TRACE(type_name(dtype));
        const int64_t width = 37;
        StoredRows rows(dtype, 2, 5, width, 16), other(dtype, 3, 9, width, 16);
        const Tensor x = testing::random_tensor({2, 5, width}, 98);
        for (int64_t b = 0; b < 2; b++) rows.store(b, 0, ConstTensorView(x.data() + b * 5 * width, {5, width}));
        const Tensor back = widened(rows.view());
        for (int64_t i = 0; i < x.size(); i++) {
            if (dtype == DType::Int8) {
                const float *row = x.data() + i / width * width;
                const int64_t first = i % width / 16 * 16;
                float largest = 0;
                for (int64_t j = first; j < std::min<int64_t>(width, first + 16); j++)
                    largest = std::max(largest, std::fabs(row[j]));
                ASSERT_LE(std::fabs(back.data()[i] - x.data()[i]), largest / 127 / 2 * 1.0001f) << i;
            } else {
                ASSERT_EQ(back.data()[i], round_to(dtype, x.data()[i])) << i;
            }
        }
        other.copy_rows(2, rows, 1, 5);
        const Tensor moved = widened(other.view());
        for (int64_t i = 0; i < 5 * width; i++) ASSERT_EQ(moved.data()[(2 * 9) * width + i], back.data()[5 * width + i]);
        EXPECT_EQ(rows.bytes_per_row(), dtype == DType::Int8 ? width + 3 * 4 : width * int64_t(dtype_size(dtype)));
    }
}

// The state's latent (R) part is held in the kv_dtype, its rotary part and the indexer keys in the
// dtype; 16-bit weights are held as 16-bit values (norm weights stay float32 words).
TEST(DsaAttention, StateRowsAndWeightsAreHeldInTheirStorageTypes) {
    const DsaAttention layer = make_layer(small_config(4), "", false, nullptr, {DType::BF16, DType::F16});
    DsaState state = layer.make_state(1, 6);
    layer.prefill(testing::random_tensor({1, 6, 64}, 91), state);
    EXPECT_EQ(state.latent().dtype, DType::F16);
    EXPECT_EQ(state.latent().shape, Shape({1, 6, 32}));
    EXPECT_EQ(state.rotary_keys().dtype, DType::BF16);
    EXPECT_EQ(state.rotary_keys().shape, Shape({1, 6, 8}));
    EXPECT_EQ(state.index_keys().dtype, DType::BF16);
    EXPECT_EQ(state.index_keys().shape, Shape({1, 6, 16}));
    bool beyond_bf16 = false;  // a latent value bf16 would not hold: f16's, not the dtype's
    const Tensor latent = widened(state.latent());
    for (float v : latent.values()) beyond_bf16 |= round_to(DType::BF16, v) != v;
    EXPECT_TRUE(beyond_bf16);
    EXPECT_EQ(layer.cache_bytes_per_token(), (32 + 8 + 16) * 2);
    const int64_t norms = 48 + 32 + 16 + 16, f32_bytes = make_layer(small_config(4)).weight_bytes();
    EXPECT_EQ(layer.weight_bytes(), (f32_bytes - 4 * norms) / 2 + 4 * norms);
}

// On a GPU a decode step (absorbed form) moves x up, and down: y, the indexer's scores (ranked on
// the host) and the latent and indexer-key rows it wrote into the caches. Everything else stays on
// the device. Widths of 32 floats keep every view the step binds aligned for OpenCL sub-buffers.
class DsaOnGpu : public testing::OnEachGpu {};

nlohmann::json aligned_config() {
    nlohmann::json config = small_config(4);
    for (const char *key : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "index_head_dim"})
        config[key] = 32;
    config["q_lora_rank"] = 64;
    config["index_n_heads"] = 4;
    return config;
}

// A DSA layer's decode calls, for the checks of tests/support/stateful_layer.h.
testing::StatefulLayer<DsaState> stateful(const DsaAttention &layer) {
    return {[&layer](int64_t batch, int64_t capacity) { return layer.make_state(batch, capacity); },
            [&layer](const Tensor &x, DsaState &s) { return layer.prefill(x, s); },
            [&layer](const Tensor &x, DsaState &s) { return layer.decode_step(x, s); }};
}

// The assigned rows are host writes that must reach the device.
TEST_P(DsaOnGpu, ASequencePrefilledElsewhereTakesAFinishedOnesSlot) {
    const DsaAttention layer = make_layer(aligned_config());
    const testing::OnDevice on(GetParam());
    EXPECT_LE(testing::continuous_batching_error(stateful(layer), 64, 62), 1e-5);
}

TEST_P(DsaOnGpu, ADecodeStepMovesOnlyItsInputOutputScoresAndNewRows) {
    const nlohmann::json config = aligned_config();
    DsaAttention gpu = make_layer(config), cpu = make_layer(config);
    const int64_t B = 2, E = 64, capacity = 16, L = 64, ID = 32;
    DsaState gpu_state = gpu.make_state(B, capacity), cpu_state = cpu.make_state(B, capacity);
    const Tensor prompt = testing::random_tensor({B, 5, E}, 80);
    cpu.prefill(prompt, cpu_state);
    {
        const testing::OnDevice on(GetParam());
        gpu.prefill(prompt, gpu_state);
    }
    for (int step = 0; step < 4; step++) {
        const Tensor x = testing::random_tensor({B, 1, E}, 81 + step);
        TopK cpu_sel, gpu_sel;
        const Tensor expected = cpu.decode_step(x, cpu_state, &cpu_sel);
        const testing::OnDevice on(GetParam());
        const detail::Transfers before = detail::data_transfers();
        const Tensor got = gpu.decode_step(x, gpu_state, &gpu_sel);
        const detail::Transfers after = detail::data_transfers();
        EXPECT_EQ(gpu_sel.indices, cpu_sel.indices) << "step " << step;
        EXPECT_LE(testing::relative_l2(got, expected), 1e-5) << "step " << step;
        if (step == 0) continue;  // the RoPE table grew to cover position 6: uploaded again
        const int64_t f = sizeof(float);
        EXPECT_EQ(after.uploaded - before.uploaded, B * E * f) << "step " << step << " uploaded more than x";
        // The scores of the keys the step sees (5 prompt tokens, then one per step), not of the
        // whole capacity.
        const int64_t seen = 5 + step + 1;
        EXPECT_EQ(after.downloaded - before.downloaded, (B * E + B * seen + B * (L + ID)) * f)
            << "step " << step << " downloaded more than y, the scores of its keys and the new cache rows";
    }
    for (const auto &[gpu_rows, cpu_rows] : {std::pair{gpu_state.latent(), cpu_state.latent()},
                                             {gpu_state.rotary_keys(), cpu_state.rotary_keys()},
                                             {gpu_state.index_keys(), cpu_state.index_keys()}}) {
        EXPECT_LE(testing::relative_l2(widened(gpu_rows), widened(cpu_rows)), 1e-5);
    }
}

// A GPU prefill expands the cached latents (widened on the host) into keys whose k_nope part the
// device wrote: 4 heads x 1100 tokens of rotary rows copied in, past the 4096 host-written ranges
// after which a region's whole host copy would count as newer than the device's. The CPU's
// selection is shared, as near-equal scores may rank apart on another device.
TEST_P(DsaOnGpu, ALongPrefillMatchesTheCpu) {
    const DsaAttention layer = make_layer(aligned_config());
    const Tensor x = testing::random_tensor({1, 1100, 64}, 83);
    TopK selected;
    const Tensor expected = layer.forward(x, &selected);
    const testing::OnDevice on(GetParam());
    EXPECT_LE(testing::relative_l2(layer.forward(x, nullptr, &selected), expected), 1e-5);
}

HATTN_INSTANTIATE_ON_EACH_GPU(DsaOnGpu);

TEST(DsaAttention, TiesGoToTheMostRecentKeys) {
    // With zero head weights every score is exactly 0: a tie everywhere, so each query must keep
    // its min(K, s + 1) most recent keys.
    DsaAttention layer = make_layer(small_config(3), "", true);
    TopK sel;
    layer.forward(testing::random_tensor({1, 7, 64}, 25), &sel);
    for (int64_t s = 0; s < 7; s++) {
        std::vector<int32_t> expected;
        for (int64_t t = std::max<int64_t>(0, s - 2); t <= s; t++) expected.push_back(static_cast<int32_t>(t));
        expected.resize(3, -1);
        EXPECT_EQ(std::vector<int32_t>(sel.row(0, s), sel.row(0, s) + 3), expected) << "query " << s;
    }
}

// The kernels a forward call runs, by name.
std::vector<std::string> kernels_run(const DsaAttention &layer, const Tensor &x) {
    return testing::kernels_ran([&] { layer.forward(x); });
}

// Each form a prefill may attend in matches the float64 reference. On a CPU (dsa_attention.cpp's
// dense_costs_less), 11 queries from an empty cache with top-64 take all their visible keys: causal
// attention over the expanded keys (values padded to the keys' width, or, with v_head_dim above it,
// queries and keys padded to the values'). With top-6 most keys are still selected: the same over
// a mask of each query's selection. With top-3 few are: the absorbed sparse kernel. A prefill in
// two calls, the second (3 new queries over 11 keys) attending in the latent wherever expanding
// the cache costs more, equals the forward.
TEST(DsaAttention, EachPrefillFormMatchesTheReference) {
    const std::map<int64_t, std::string> kernel_of_topk{
        {64, "attention_prefill"}, {6, "attention_prefill_masked"}, {3, "dsa_latent_attention"}};
    for (const auto &[v_dim, latent] : {std::pair<int64_t, int64_t>{16, 32}, {40, 64}})
        for (const auto &[topk, kernel] : kernel_of_topk) {
            nlohmann::json config = small_config(topk);
            config["v_head_dim"] = v_dim;
            config["kv_lora_rank"] = latent;
            std::map<std::string, Tensor> w;
            const DsaAttention layer = make_layer(config, "", false, &w);
            const Tensor x = testing::random_tensor({2, 11, 64}, 28);
            const reference::DsaShape shape{64, 4, 48, latent, 16, 8, v_dim, 3, 16, topk, 10000.0, 1e-6};
            const Tensor y = layer.forward(x);
            EXPECT_LE(testing::relative_l2(y, reference::dsa_attention(shape, w, x)), 1e-4)
                << "v_head_dim " << v_dim << ", topk " << topk;
            DsaState state = layer.make_state(2, 11);
            layer.prefill(x.tokens(0, 8), state);
            const Tensor last = layer.prefill(x.tokens(8, 11), state);
            EXPECT_LE(testing::relative_l2(last, y.tokens(8, 11)), 1e-5) << "v_head_dim " << v_dim << ", topk " << topk;
            if (current_device() != Device::CPU) continue;
            const std::vector<std::string> names = kernels_run(layer, x);
            EXPECT_NE(std::find(names.begin(), names.end(), kernel), names.end()) << "topk " << topk;
        }
}

// The dense form over more than one block of 512 queries: the first block's queries take all
// their keys (no mask), the second's select 520 (a mask); a prefill continued from 100 tokens
// runs its one block masked.
TEST(DsaAttention, DensePrefillAcrossQueryBlocksMatchesTheReference) {
    std::map<std::string, Tensor> w;
    const DsaAttention layer = make_layer(small_config(520), "", false, &w);
    const Tensor x = testing::random_tensor({1, 600, 64}, 30);
    const reference::DsaShape shape{64, 4, 48, 32, 16, 8, 16, 3, 16, 520, 10000.0, 1e-6};
    const Tensor y = layer.forward(x);
    EXPECT_LE(testing::relative_l2(y, reference::dsa_attention(shape, w, x)), 1e-4);
    DsaState state = layer.make_state(1, 600);
    layer.prefill(x.tokens(0, 100), state);
    EXPECT_LE(testing::relative_l2(layer.prefill(x.tokens(100, 600), state), y.tokens(100, 600)), 1e-5);
    if (current_device() != Device::CPU) return;
    const std::vector<std::string> names = kernels_run(layer, x);
    for (const std::string kernel : {"attention_prefill", "attention_prefill_masked"})
        EXPECT_NE(std::find(names.begin(), names.end(), kernel), names.end()) << kernel;
}

// A query that sees at most K keys takes them all: while none sees more, no indexer scores run;
// once one does, they run, and the queries before it still take all their keys.
TEST(DsaAttention, QueriesSeeingAtMostKKeysNeedNoIndexer) {
    const DsaAttention layer = make_layer(small_config(6));
    const auto has = [](const std::vector<std::string> &names, const std::string &kernel) {
        return std::find(names.begin(), names.end(), kernel) != names.end();
    };
    EXPECT_FALSE(has(kernels_run(layer, testing::random_tensor({2, 6, 64}, 26)), "dsa_index_scores"));
    EXPECT_TRUE(has(kernels_run(layer, testing::random_tensor({2, 7, 64}, 27)), "dsa_index_scores"));
    TopK sel;
    layer.forward(testing::random_tensor({1, 9, 64}, 28), &sel);
    for (int64_t s = 0; s < 6; s++) {
        std::vector<int32_t> expected(6, -1);
        std::iota(expected.begin(), expected.begin() + s + 1, 0);
        EXPECT_EQ(std::vector<int32_t>(sel.row(0, s), sel.row(0, s) + 6), expected) << "query " << s;
    }
}

TEST(DsaAttention, IndexShapesDecodeLikeTheForward) {
    for (auto [heads, dim] : {std::pair<int, int>{1, 8}, {2, 32}, {8, 16}}) {
        nlohmann::json config = small_config(5);
        config["index_n_heads"] = heads;
        config["index_head_dim"] = dim;
        DsaAttention layer = make_layer(config);
        const Tensor x = testing::random_tensor({1, 9, 64}, 26);
        const Tensor expected = layer.forward(x);
        DsaState state = layer.make_state(1, 9);
        Tensor out({1, 9, 64});
        for (int64_t s = 0; s < 9; s++) {
            const Tensor y = layer.decode_step(x.tokens(s, s + 1), state);
            std::copy_n(y.data(), 64, out.data() + s * 64);
        }
        EXPECT_LE(testing::relative_l2(out, {expected.values().begin(), expected.values().end()}), 1e-5)
            << heads << " index heads of " << dim;
    }
}

TEST(DsaAttention, SelectsMinOfTopkAndTheVisiblePrefix) {
    DsaAttention layer = make_layer(small_config(3));
    TopK sel;
    layer.forward(testing::random_tensor({1, 6, 64}, 21), &sel);
    ASSERT_EQ(sel.k, 3);
    for (int64_t s = 0; s < 6; s++) {
        int64_t count = 0;
        for (int64_t n = 0; n < 3; n++) {
            const int32_t t = sel.row(0, s)[n];
            if (t < 0) continue;
            EXPECT_LE(t, s);
            count++;
        }
        EXPECT_EQ(count, std::min<int64_t>(3, s + 1));
    }
}

// The error a forward with `shared` indices gives ("" when none).
std::string shared_indices_error(const DsaAttention &layer, const Tensor &x, const TopK &shared) {
    try {
        layer.forward(x, nullptr, &shared);
        return "";
    } catch (const Error &e) {
        return e.what();
    }
}

TEST(DsaAttention, SharedIndicesAreUsedAndBoundsChecked) {
    DsaAttention layer = make_layer(small_config(2));
    const Tensor x = testing::random_tensor({1, 4, 64}, 22);
    TopK sel;
    const Tensor y = layer.forward(x, &sel);
    // A layer reusing them attends in the latent (a shared selection may name a key twice, which
    // the dense form's mask cannot say), where the selecting call may have run dense.
    EXPECT_LE(testing::relative_l2(layer.forward(x, nullptr, &sel), y), 1e-5);
    TopK bad = sel;
    bad.indices[2 * bad.k] = 3;  // query 2 cannot see key 3
    EXPECT_NE(shared_indices_error(layer, x, bad).find("outside its visible keys"), std::string::npos)
        << shared_indices_error(layer, x, bad);
    TopK short_one = sel;
    short_one.indices.pop_back();  // the header says [1, 4, K]; one entry is missing
    EXPECT_NE(shared_indices_error(layer, x, short_one).find("B x S x K entries"), std::string::npos)
        << shared_indices_error(layer, x, short_one);
}

// An input of 3e38 overflows float32 in the projections (squared in the norms): the call is refused,
// naming where, and the state goes on as if it had not been made.
TEST(DsaAttention, AnOverflowIsRefusedAndKeepsTheState) {
    const DsaAttention layer = make_layer(small_config(4));
    DsaState state = layer.make_state(2, 8), clean = layer.make_state(2, 8);
    const std::string message = testing::error_message(
        [&] { layer.prefill(Tensor({2, 2, 64}, std::vector<float>(4 * 64, 3e38f)), state); });
    testing::expect_contains(message, "glm_dsa: q_a_proj overflowed float32 (element 0 is NaN)");
    testing::expect_contains(message, "the input's largest magnitude is 3e+38, the largest weight");
    EXPECT_EQ(state.lengths(), std::vector<int32_t>(2, 0));
    const Tensor prompt = testing::random_tensor({2, 3, 64}, 26);
    EXPECT_LE(testing::relative_l2(layer.prefill(prompt, state), layer.prefill(prompt, clean)), 1e-6);
}

// The indexer keys of a prompt's first K tokens join the state unscored, so an overflow there
// would leave the output finite, and later calls would rank NaN scores. Refused where it appears,
// the state unchanged.
TEST(DsaAttention, AnOverflowingIndexerKeyIsRefusedThoughUnscored) {
    std::map<std::string, Tensor> w;
    const DsaAttention layer = make_layer(small_config(4), "", false, &w);
    for (int64_t i = 0; i < 64; i++) w["indexer.wk.weight"].data()[i] = 3e38f;  // its first row
    testing::TempDir dir;
    write_safetensors(dir.file("w.safetensors"), w);
    const DsaAttention huge(layer.config(), Weights::open(dir.file("w.safetensors")));
    DsaState state = huge.make_state(1, 8);
    const Tensor x({1, 2, 64}, std::vector<float>(2 * 64, 1.0f));
    testing::expect_contains(testing::error_message([&] { huge.prefill(x, state); }),
                             "glm_dsa: the indexer's wk overflowed float32");
    EXPECT_EQ(state.lengths(), std::vector<int32_t>{0});
}

TEST(DsaAttention, FullCacheThrowsAndKeepsTheState) {
    DsaAttention layer = make_layer(small_config(4));
    DsaState state = layer.make_state(1, 3);
    layer.prefill(testing::random_tensor({1, 2, 64}, 23), state);
    EXPECT_THROW(layer.prefill(testing::random_tensor({1, 2, 64}, 24), state), Error);
    EXPECT_EQ(state.lengths(), std::vector<int32_t>({2}));
}

// A state belongs to the layer that made it: a layer of another latent or index width would write
// past its rows (or read them at the wrong width), and one of the same widths would read latents
// and index keys that another layer wrote. Each is refused, the state unchanged: which layer made
// a state decides, not its widths or weights (the last layer here even loads the same weights).
TEST(DsaAttention, AStateOfAnotherLayerIsRefused) {
    nlohmann::json wider_latent = small_config(4), wider_index = small_config(4);
    wider_latent["kv_lora_rank"] = 48;
    wider_index["index_head_dim"] = 24;
    const DsaAttention layer = make_layer(small_config(4));
    DsaState state = layer.make_state(1, 4);
    for (const nlohmann::json &other : {wider_latent, wider_index, small_config(4)}) {
        const DsaAttention other_layer = make_layer(other);
        const std::string message = testing::error_message([&] {
            other_layer.prefill(testing::random_tensor({1, 2, 64}, 30), state);
        });
        EXPECT_EQ(message,
                  "glm_dsa: the state was made by another layer (a layer takes only the states its make_state made)");
        EXPECT_EQ(state.lengths(), std::vector<int32_t>({0}));
        DsaState other_state = other_layer.make_state(1, 4);
        EXPECT_THROW(layer.prefill(testing::random_tensor({1, 2, 64}, 30), other_state), Error);
        EXPECT_EQ(testing::error_message([&] { state.assign_sequence(0, other_state); }),
                  "glm_dsa state: cannot take a sequence from a state another layer made");
    }
}

// Every token's data is in the state's rows, so a truncated sequence continues exactly as one
// that never held the cut tokens; a fork continues as its source.
TEST(DsaState, TruncateAndForkContinueLikeFreshSequences) {
    // Every storage type's rows move alike: codes with their scales, 16-bit words.
    for (const StorageTypes types :
         {StorageTypes{}, StorageTypes{DType::BF16, DType::Int8}, StorageTypes{DType::F16, DType::F16}}) {
        SCOPED_TRACE(std::string(type_name(types.dtype)) + " / " + type_name(types.kv_dtype));
        DsaAttention layer = make_layer(small_config(3), "", false, nullptr, types);
        const Tensor x = testing::random_tensor({2, 6, 64}, 28), other = testing::random_tensor({2, 3, 64}, 29);
        DsaState fresh = layer.make_state(2, 10);
        layer.prefill(x.tokens(0, 4), fresh);
        const Tensor expected = layer.decode_step(x.tokens(4, 5), fresh);

        DsaState s = layer.make_state(2, 10);
        layer.prefill(x.tokens(0, 4), s);
        layer.prefill(other, s);
        s.truncate_to(4);
        EXPECT_EQ(s.lengths(), std::vector<int32_t>({4, 4}));
        EXPECT_LE(testing::relative_l2(layer.decode_step(x.tokens(4, 5), s), expected), 1e-6);

        DsaState forked = layer.make_state(2, 10);
        layer.prefill(x.tokens(0, 4), forked);
        forked.fork(0, 1);
        Tensor same_token({2, 1, 64});
        std::copy_n(x.data() + 4 * 64, 64, same_token.data());
        std::copy_n(x.data() + 4 * 64, 64, same_token.data() + 64);
        const Tensor y = layer.decode_step(same_token, forked);
        EXPECT_EQ(std::vector<float>(y.data() + 64, y.data() + 128), std::vector<float>(y.data(), y.data() + 64));
        EXPECT_LE(testing::relative_l2(Tensor({1, 1, 64}, std::vector<float>(y.data(), y.data() + 64)),
                                       std::vector<double>(expected.data(), expected.data() + 64)),
                  1e-6);

        EXPECT_THROW(s.truncate_to(11), Error);
        EXPECT_THROW(s.truncate_to(0, 2), Error);
        EXPECT_THROW(s.fork(0, -1), Error);
        EXPECT_EQ(s.lengths(), std::vector<int32_t>({5, 5}));
        s.reset(1);
        EXPECT_EQ(s.lengths(), std::vector<int32_t>({5, 0}));
        EXPECT_THROW(s.reset(2), Error);
        s.reset();
        EXPECT_EQ(s.lengths(), std::vector<int32_t>({0, 0}));
    }
}

TEST(DsaState, NonFiniteInputIsRefusedAndChangesNothing) {
    const DsaAttention layer = make_layer(small_config(3));
    double divergence = 1;
    EXPECT_EQ(testing::non_finite_input_messages(stateful(layer), 64, 64, divergence),
              std::vector<std::string>({"glm_dsa: input: element 69 is NaN; inputs must be finite",
                                        "glm_dsa: input: element 3 is infinite; inputs must be finite"}));
    EXPECT_LE(divergence, 1e-6);
}

TEST(DsaAttentionThreads, OneLayerServesThreadsThatEachHaveAState) {
    const DsaAttention layer = make_layer(small_config(3));
    EXPECT_LE(testing::shared_by_threads_error(stateful(layer), 64, 63), 1e-6);
}

TEST(DsaState, ASequencePrefilledElsewhereTakesAFinishedOnesSlot) {
    const DsaAttention layer = make_layer(small_config(3));
    EXPECT_LE(testing::continuous_batching_error(stateful(layer), 64, 60), 1e-6);
    DsaState small = layer.make_state(1, 4), big = layer.make_state(1, 16);
    layer.prefill(testing::random_tensor({1, 6, 64}, 61), big);
    EXPECT_THROW(small.assign_sequence(0, big), Error);  // 6 tokens, capacity 4
    EXPECT_THROW(small.assign_sequence(1, big), Error);
    EXPECT_THROW(big.assign_sequence(0, small, 1), Error);
    EXPECT_EQ(small.lengths(), std::vector<int32_t>({0}));
}

TEST(DsaState, NoTokensOrNoSequencesChangeNothing) {
    const DsaAttention layer = make_layer(small_config(3));
    EXPECT_EQ(layer.forward(Tensor({2, 0, 64})).shape(), Shape({2, 0, 64}));
    TopK none{7, 7, 7, {}};
    EXPECT_EQ(layer.forward(Tensor({0, 3, 64}), &none).shape(), Shape({0, 3, 64}));
    EXPECT_EQ(none.batch, 0);  // written, not left as it was
    // An empty call's selection passes to the next layer of a shared-indexer stack.
    TopK empty_selection;
    layer.forward(Tensor({2, 0, 64}), &empty_selection);
    EXPECT_EQ(layer.forward(Tensor({2, 0, 64}), nullptr, &empty_selection).shape(), Shape({2, 0, 64}));
    DsaState s = layer.make_state(2, 8);
    layer.prefill(testing::random_tensor({2, 3, 64}, 70), s);
    const DsaState before = s;
    TopK sel;
    EXPECT_EQ(layer.prefill(Tensor({2, 0, 64}), s, &sel).shape(), Shape({2, 0, 64}));
    EXPECT_EQ(sel.queries, 0);
    EXPECT_EQ(s.lengths(), before.lengths());
    for (const auto &[now, then] : {std::pair{s.latent(), before.latent()}, {s.rotary_keys(), before.rotary_keys()},
                                    {s.index_keys(), before.index_keys()}}) {
        EXPECT_EQ(widened(now).values(), widened(then).values());
    }
}

// ---------------------------------------------------------------- the kernels on their own

// The keys held in `key_type` (the layer's dtype), as a state holds them; the reference reads
// their widened values. With bf16_queries the queries are bf16 values, as a bf16 layer's are.
double index_scores_error(int64_t B, int64_t S, int64_t IH, int64_t ID, int64_t len, uint32_t seed,
                          DType key_type = DType::F32, bool bf16_queries = false) {
    Tensor iq = testing::random_tensor({B, S, IH, ID}, seed);
    if (bf16_queries) round_to(DType::BF16, iq.data(), iq.size());
    StoredRows keys(key_type, B, len + 2, ID);
    const Tensor raw = testing::random_tensor({B, len + 2, ID}, seed + 1);
    for (int64_t b = 0; b < B; b++) keys.store(b, 0, ConstTensorView(raw.data() + b * (len + 2) * ID, {len + 2, ID}));
    const Tensor ik = widened(keys.view());
    const Tensor w = testing::random_tensor({B, S, IH}, seed + 2);
    Tensor scores({B, S, len + 2});
    const std::vector<int32_t> lengths(B, static_cast<int32_t>(len));
    const double scale = 1.0 / std::sqrt(double(ID));
    dsa_index_scores(iq.view(), keys.view(), w.view(), lengths, static_cast<float>(scale), scores.view());
    std::vector<double> ref(scores.size(), 0.0);
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t t = 0; t <= len - S + s; t++) {
                double total = 0;
                for (int64_t h = 0; h < IH; h++) {
                    double dot = 0;
                    for (int64_t d = 0; d < ID; d++)
                        dot += double(iq.data()[((b * S + s) * IH + h) * ID + d]) * ik.data()[(b * (len + 2) + t) * ID + d];
                    total += w.data()[(b * S + s) * IH + h] * std::max(dot * scale, 0.0);
                }
                ref[(b * S + s) * (len + 2) + t] = total;
            }
    return testing::relative_l2(scores, ref);
}

// Sparse attention against the dense kernel with everything but the selection masked: the same
// result, at O(S * K) instead of O(S * T).
double sparse_vs_dense(int64_t B, int64_t S, int64_t H, int64_t D, int64_t K, uint32_t seed) {
    const int64_t T = S;
    const Tensor q = testing::random_tensor({B, S, H, D}, seed);
    const Tensor k = testing::random_tensor({B, T, H, D}, seed + 1), v = testing::random_tensor({B, T, H, D}, seed + 2);
    std::mt19937 rng(seed + 3);
    std::vector<int32_t> idx(B * S * K, -1);
    std::vector<uint8_t> mask(B * S * T, 1);
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++) {
            std::vector<int32_t> visible(s + 1);
            std::iota(visible.begin(), visible.end(), 0);
            std::shuffle(visible.begin(), visible.end(), rng);
            for (int64_t n = 0; n < std::min<int64_t>(K, s + 1); n++) {
                idx[(b * S + s) * K + n] = visible[n];
                mask[(b * S + s) * T + visible[n]] = 0;
            }
        }
    const float scale = 1.0f / std::sqrt(float(D));
    Tensor sparse({B, S, H, D}), dense({B, S, H, D});
    dsa_sparse_attention(q.view(), k.view(), v.view(), idx, K, scale, sparse.view());
    // The dense kernel wants [B, Hkv, T, D] storage.
    Tensor kc({B, H, T, D}), vc({B, H, T, D});
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < H; h++) {
                std::copy_n(k.data() + ((b * T + t) * H + h) * D, D, kc.data() + ((b * H + h) * T + t) * D);
                std::copy_n(v.data() + ((b * T + t) * H + h) * D, D, vc.data() + ((b * H + h) * T + t) * D);
            }
    const MaskView m{mask.data(), {B, 1, S, T}};
    attention_prefill(q.view(), kc.view(), vc.view(), std::vector<int32_t>(B, static_cast<int32_t>(T)), scale, true, &m,
                      dense.view());
    return testing::relative_l2(sparse, {dense.values().begin(), dense.values().end()});
}

// The absorbed form: keys of one head (latent rows of Dk: Dv latent values, then Dk - Dv rotary
// ones) read by every query head, values the latent values, against a float64 reference over their
// widened values; the latent held in `latent_type` (int8: groups of 128), the rotary part in
// `rotary_type`. Query s selects up to K distinct rows of T at random, the rest -1; with `empty`,
// the last query selects none and outputs zeros. `bf16_queries`: the queries are bf16 values (a
// bf16 layer's, which bf16 pairs take).
double shared_kv_error(int64_t B, int64_t S, int64_t H, int64_t Dk, int64_t Dv, int64_t K, int64_t T, bool empty,
                       uint32_t seed, DType latent_type = DType::F32, DType rotary_type = DType::F32,
                       bool bf16_queries = false) {
    Tensor q = testing::random_tensor({B, S, H, Dk}, seed);
    if (bf16_queries) round_to(DType::BF16, q.data(), q.size());
    const Tensor raw = testing::random_tensor({B, T, Dk}, seed + 1);
    StoredRows latent(latent_type, B, T, Dv, DsaState::int8_group), rotary(rotary_type, B, T, Dk - Dv);
    for (int64_t b = 0; b < B; b++) {
        latent.store(b, 0, ConstTensorView(raw.data() + b * T * Dk, {T, Dv}, {Dk, 1}));
        rotary.store(b, 0, ConstTensorView(raw.data() + b * T * Dk + Dv, {T, Dk - Dv}, {Dk, 1}));
    }
    const Tensor latent_values = widened(latent.view()), rotary_values = widened(rotary.view());
    const auto key = [&](int64_t b, int64_t t, int64_t d) {
        return d < Dv ? double(latent_values.data()[(b * T + t) * Dv + d])
                      : double(rotary_values.data()[(b * T + t) * (Dk - Dv) + d - Dv]);
    };
    std::mt19937 rng(seed + 2);
    std::vector<int32_t> idx(B * S * K, -1), rows(T);
    std::iota(rows.begin(), rows.end(), 0);
    for (int64_t bs = 0; bs < B * S; bs++) {
        std::shuffle(rows.begin(), rows.end(), rng);
        const int64_t n = empty && bs == B * S - 1 ? 0 : std::min<int64_t>(K, 1 + rng() % T);
        std::copy_n(rows.begin(), n, idx.begin() + bs * K);
    }
    const float scale = 1.0f / std::sqrt(float(Dk));
    Tensor out({B, S, H, Dv});
    dsa_latent_attention(q.view(), latent.view(), rotary.view(), idx, K, scale, out.view());
    std::vector<double> ref(out.size(), 0.0);
    for (int64_t bs = 0; bs < B * S; bs++)
        for (int64_t h = 0; h < H; h++) {
            const float *qh = q.data() + (bs * H + h) * Dk;
            std::vector<double> logit;
            for (int64_t n = 0; n < K && idx[bs * K + n] >= 0; n++) {
                double dot = 0;
                for (int64_t d = 0; d < Dk; d++) dot += double(qh[d]) * key(bs / S, idx[bs * K + n], d);
                logit.push_back(dot * scale);
            }
            if (logit.empty()) continue;
            const double top = *std::max_element(logit.begin(), logit.end());
            double sum = 0;
            for (double &l : logit) sum += l = std::exp(l - top);
            double *o = ref.data() + (bs * H + h) * Dv;
            for (size_t n = 0; n < logit.size(); n++)
                for (int64_t d = 0; d < Dv; d++) o[d] += logit[n] / sum * key(bs / S, idx[bs * K + n], d);
        }
    return testing::relative_l2(out, ref);
}

TEST(DsaKernels, IndexScoresMatchReference) { EXPECT_LE(index_scores_error(2, 5, 3, 16, 19, 40), 1e-5); }
TEST(DsaKernels, SparseEqualsDenseWithMask) { EXPECT_LE(sparse_vs_dense(2, 23, 3, 24, 5, 41), 1e-5); }

TEST(DsaKernels, SharedKeysMatchReference) {
    EXPECT_LE(shared_kv_error(2, 3, 20, 40, 36, 7, 30, true, 47), 1e-5);
    EXPECT_LE(shared_kv_error(2, 3, 4, 12, 8, 5, 9, true, 52), 1e-5);
}

TEST(DsaKernels, SparseRejectsIndicesOutsideTheCache) {
    Tensor q({1, 1, 1, 4}), k({1, 3, 1, 4}), out({1, 1, 1, 4});
    EXPECT_THROW(dsa_sparse_attention(q.view(), k.view(), k.view(), {3}, 1, 1.0f, out.view()), Error);
    // With B * S = 4, a K of 2^62 + 1 makes B * S * K wrap to 4, the indices' count: not a K of one.
    Tensor q4({1, 4, 1, 4}), out4({1, 4, 1, 4});
    EXPECT_EQ(testing::error_message([&] {
                  dsa_sparse_attention(q4.view(), k.view(), k.view(), {0, 0, 0, 0}, (int64_t{1} << 62) + 1, 1.0f,
                                       out4.view());
              }),
              "dsa sparse attention: indices must be [B, S, K]");
    EXPECT_EQ(
        testing::error_message([&] { dsa_sparse_attention(q.view(), k.view(), k.view(), {0}, 1, NAN, out.view()); }),
        "dsa sparse attention: scale must be finite, got nan");
}

bool register_latent_checks() {
    for (DType latent : {DType::F32, DType::BF16, DType::F16, DType::Int8})
        for (DType rotary : {DType::F32, DType::BF16, DType::F16}) {
            std::string name = "dsa_latent_attention";
            if (latent != DType::F32 || rotary != DType::F32) {
                name += std::string("_") + type_name(latent) + "_" + type_name(rotary);
            }
            testing::register_kernel_check(
                name, {[=] {
                           return std::max({shared_kv_error(2, 3, 20, 40, 36, 7, 30, true, 48, latent, rotary),
                                            shared_kv_error(1, 2, 20, 40, 36, 300, 500, false, 49, latent, rotary),
                                            shared_kv_error(1, 2, 4, 48, 40, 9, 20, true, 53, latent, rotary),
                                            shared_kv_error(1, 2, 4, 12, 8, 5, 9, true, 51, latent, rotary),
                                            shared_kv_error(1, 2, 4, 268, 260, 9, 20, true, 54, latent, rotary),
                                            shared_kv_error(1, 2, 8, 264, 256, 9, 20, true, 55, latent, rotary)});
                       },
                       1e-5,
                       [=] { return shared_kv_error(1, 1, 16, 576, 512, 2048, 4096, false, 50, latent, rotary); }});
        }
    // A bf16 layer's, in bf16 pairs (bf16 queries): the shapes above with an even R at least as
    // wide as its tiles (kernel_contract.h).
    const auto pairs = [](int64_t B, int64_t S, int64_t H, int64_t Dk, int64_t Dv, int64_t K, int64_t T, bool empty,
                          uint32_t seed) {
        return testing::with_bf16_form(Bf16DotForm::Pairs, [&] {
            return shared_kv_error(B, S, H, Dk, Dv, K, T, empty, seed, DType::BF16, DType::BF16, true);
        });
    };
    testing::register_kernel_check(
        "dsa_latent_attention_bf16_bf16_pairs",
        {[=] {
             return std::max({pairs(2, 3, 20, 40, 36, 7, 30, true, 148), pairs(1, 2, 20, 40, 36, 300, 500, false, 149),
                              pairs(1, 2, 4, 48, 40, 9, 20, true, 153), pairs(1, 2, 8, 264, 256, 9, 20, true, 155)});
         },
         1e-5, [=] { return pairs(1, 1, 16, 576, 512, 2048, 4096, false, 150); }});
    return true;
}

const bool checks_registered =
    testing::register_kernel_check("dsa_index_scores", {[] { return index_scores_error(1, 7, 4, 16, 30, 42); }, 1e-5,
                                                        [] { return index_scores_error(1, 512, 32, 128, 512, 43); }}) &&
    testing::register_kernel_check("dsa_index_scores_bf16",
                                   {[] { return index_scores_error(1, 7, 4, 16, 30, 42, DType::BF16); }, 1e-5,
                                    [] { return index_scores_error(1, 512, 32, 128, 512, 43, DType::BF16); }}) &&
    // In bf16 pairs: 4 heads (fewer than a vector), 40 (past two), an ID of 16, and GLM-5's shape.
    testing::register_kernel_check(
        "dsa_index_scores_bf16_pairs",
        {[] {
             return testing::with_bf16_form(Bf16DotForm::Pairs, [] {
                 return std::max(index_scores_error(2, 7, 4, 16, 30, 42, DType::BF16, true),
                                 index_scores_error(1, 3, 40, 32, 77, 44, DType::BF16, true));
             });
         },
         1e-5,
         [] {
             return testing::with_bf16_form(
                 Bf16DotForm::Pairs, [] { return index_scores_error(1, 512, 32, 128, 512, 43, DType::BF16, true); });
         }}) &&
    testing::register_kernel_check("dsa_index_scores_f16",
                                   {[] { return index_scores_error(1, 7, 4, 16, 30, 42, DType::F16); }, 1e-5,
                                    [] { return index_scores_error(1, 512, 32, 128, 512, 43, DType::F16); }}) &&
    // K = 300: past the GPU's 256 lanes of the row's max and sum, and not a whole number of its
    // PV steps of 8 keys.
    testing::register_kernel_check(
        "dsa_sparse_attention",
        {[] { return std::max(sparse_vs_dense(1, 17, 2, 8, 4, 44), sparse_vs_dense(1, 400, 2, 8, 300, 46)); }, 1e-5,
         [] { return sparse_vs_dense(1, 512, 16, 24, 64, 45); }}) &&
    // Every storage type pair of the latent attention: 20 heads, past a tile of 8 and a vector of
    // 16; K = 300 as above; 4 heads of 40 values: fewer heads than a tile; 4 heads of 8 values:
    // narrower than any CPU schedule's tile; 260 latent values: an int8 latent's 3 groups, the
    // last of 4 values; 256 values and 8 heads: whole groups, which int8 tiles split.
    register_latent_checks();

// A config built by hand skips from()'s checks: validate() names the field, and the layer calls
// it before reading a weight. What the weights' shapes would not catch is among these.
TEST(DsaConfig, AHandBuiltConfigIsCheckedByTheLayer) {
    std::map<std::string, Tensor> weights;
    make_layer(small_config(4), "", false, &weights);
    testing::TempDir dir;
    write_safetensors(dir.file("w.safetensors"), weights);
    const DsaConfig read = DsaConfig::from(testing::config_of(small_config(4)));
    testing::expect_each_change_refused<DsaConfig>(
        read,
        {
            {[](DsaConfig &c) { c.index_topk = -2; }, "index_topk must be positive, got -2"},
            {[](DsaConfig &c) { c.v_dim = 0; }, "v_dim must be positive, got 0"},
            {[](DsaConfig &c) { c.rope_dim = 3; }, "rope_dim must be even, got 3"},
            {[](DsaConfig &c) { c.rope_dim = c.index_dim + 2; }, "rope_dim (" + std::to_string(read.index_dim + 2) +
                                                                     ") must not exceed index_dim (" +
                                                                     std::to_string(read.index_dim) + ")"},
            {[](DsaConfig &c) { c.rope_theta = -1; }, "rope_theta must be positive, got -1.000000"},
            {[](DsaConfig &c) { c.rms_eps = 0; }, "rms_eps must be positive, got 0.000000"},
        },
        "glm_dsa", [&](const DsaConfig &c) { DsaAttention(c, Weights::open(dir.file("w.safetensors"))); });
}

TEST(DsaConfig, RejectsWhatIsOutOfScope) {
    nlohmann::json yarn = small_config(4);
    yarn["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4}};
    EXPECT_THROW(DsaConfig::from(testing::config_of(yarn)), Error);
    nlohmann::json linear = small_config(4);
    linear["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
    EXPECT_EQ(testing::error_message([&] { DsaConfig::from(testing::config_of(linear)); }),
              "config.json (rope_scaling): rope_type 'linear' is not supported (default only)");
    nlohmann::json odd = small_config(4);
    odd["qk_rope_head_dim"] = 7;
    EXPECT_THROW(DsaConfig::from(testing::config_of(odd)), Error);
}

TEST(DsaConfig, NestedRopeKeysAndTheNormEpsilonAreChecked) {
    const auto error = [](const std::string &key, const nlohmann::json &value) {
        nlohmann::json json = small_config(4);
        json[key] = value;
        try {
            DsaConfig::from(testing::config_of(json));
        } catch (const Error &e) {
            EXPECT_TRUE(e.is_invalid_input()) << e.what();
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(error("rope_parameters", {{"rope_theta", "x"}}),
              "config.json (rope_parameters): key 'rope_theta' must be a number, got \"x\"");
    EXPECT_EQ(error("rope_parameters", {{"rope_type", 5}}),
              "config.json (rope_parameters): key 'rope_type' must be a string, got 5");
    EXPECT_EQ(error("rope_parameters", {{"rope_theta", -5.0}}), "config.json: rope_theta must be positive");
    EXPECT_EQ(error("rope_scaling", "linear"), "config.json: key 'rope_scaling' must be an object, got \"linear\"");
    EXPECT_EQ(error("rope_scaling", {{"type", "yarn"}}),
              "config.json (rope_scaling): rope_type 'yarn' is not supported (default only)");
    EXPECT_EQ(error("rms_norm_eps", -1.0), "config.json: rms_norm_eps must be positive");
    nlohmann::json json = small_config(4);
    json["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500.0}};
    EXPECT_EQ(DsaConfig::from(testing::config_of(json)).rope_theta, 500.0);
}

// A top-k larger than any sequence can hold costs nothing: its columns stop at the capacity.
TEST(DsaAttention, AHugeTopkStopsAtTheCapacity) {
    DsaAttention layer = make_layer(small_config(2147483647));
    TopK sel;
    const Tensor x = testing::random_tensor({1, 6, 64}, 21);
    const Tensor y = layer.forward(x, &sel);
    EXPECT_EQ(sel.k, 6);
    EXPECT_EQ(y.values(), make_layer(small_config(6)).forward(x).values());
}

}  // namespace
}  // namespace hattn
