// CCA / CCGQA (hattn::LatentAttention) against the float64 reference of the spec: every switch,
// group sizes, short sequences, prefill + decode through the state, validation, cache size; and
// the latent q/k kernel on its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "device_residency.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/kernels/cca.h"
#include "hattn/layers/latent_attention.h"
#include "hattn/stored_tensor.h"
#include "hattn/safetensors_writer.h"
#include "reference/latent_attention.h"
#include "support/compare.h"
#include "support/config.h"
#include "support/stateful_layer.h"
#include "support/device.h"
#include "support/config_changes.h"
#include "support/errors.h"
#include "support/kernel_checks.h"
#include "support/random.h"
#include "support/temp_dir.h"

namespace hattn {
namespace {

Tensor scaled(const Shape &shape, uint32_t seed, float amplitude) {
    Tensor t = testing::random_tensor(shape, seed);
    for (int64_t i = 0; i < t.size(); i++) t.data()[i] *= amplitude;
    return t;
}

// A seed CCA / CCGQA layer with random weights under the seed's names, and its reference twin.
struct SeedLayer {
    LatentAttentionConfig config;
    reference::LatentWeights ref;
    std::map<std::string, Tensor> tensors;  // as written to the layer's weights file
    std::optional<LatentAttention> layer;

    SeedLayer(const nlohmann::json &json, bool grouped, uint32_t seed = 1, StorageTypes storage = {}) {
        config = LatentAttentionConfig::cca(testing::config_of(json), grouped);
        config.storage = storage;
        const int64_t E = config.hidden, P = config.packed(), Lq = config.query_rank(), Lkv = config.kv_rank();
        const int64_t dh = config.head_dim;
        ref.E = E, ref.H = config.heads, ref.Hkv = config.kv_heads, ref.dh = dh;
        ref.conv_layers = config.num_conv_layers, ref.k0 = config.conv_kernel_seq, ref.k1 = config.conv_kernel_ch;
        ref.qk_mean = config.qk_mean, ref.value_shift = config.value_shift, ref.causal = config.causal;
        ref.bitnet = config.bitnet, ref.rotary_dim = dh, ref.rope_base = config.rope_base, ref.eps = 1e-6;
        const float a = 1.0f / std::sqrt(float(E));
        std::map<std::string, Tensor> t;
        t["linear_qk.weight"] = ref.w_qk = scaled({P, E}, seed, a);
        if (config.value_shift) {
            t["val_proj1.weight"] = ref.w_v = scaled({Lkv / 2, E}, seed + 1, a);
            t["val_proj2.weight"] = ref.w_v2 = scaled({Lkv / 2, E}, seed + 2, a);
        } else {
            t["val_proj.weight"] = ref.w_v = scaled({Lkv, E}, seed + 1, a);
        }
        t["out_proj.weight"] = ref.w_o = scaled({E, Lq}, seed + 3, 1.0f / std::sqrt(float(Lq)));
        if (config.num_conv_layers >= 1) t["conv_qk0.weight"] = ref.w0 = scaled({P, 1, config.conv_kernel_seq}, seed + 4, 0.6f);
        if (config.num_conv_layers >= 2) t["conv_qk1.weight"] = ref.w1 = scaled({P, dh, config.conv_kernel_ch}, seed + 5, 0.3f);
        t["temp"] = scaled({1}, seed + 6, 0.3f);
        t["unused.extra"] = Tensor({2});  // extra tensors in the file are ignored
        // In a 16-bit dtype the weights are values of it (as a checkpoint of that type holds), so
        // the reference shows what the rounded activations cost.
        for (Tensor *w : {&ref.w_qk, &ref.w_v, &ref.w_v2, &ref.w_o, &ref.w0, &ref.w1}) {
            round_to(storage.dtype, w->data(), w->size());
        }
        for (auto &[name, w] : t) round_to(storage.dtype, w.data(), w.size());
        ref.key_scale.assign(config.kv_heads, std::exp(double(t["temp"].data()[0])));
        tensors = t;
        layer.emplace(build(config, t));
    }

    // A layer of `config` on these tensors (written to a file and read back).
    static LatentAttention build(const LatentAttentionConfig &config, const std::map<std::string, Tensor> &t) {
        testing::TempDir dir;
        write_safetensors(dir.file("w.safetensors"), t);
        return LatentAttention(config, Weights::open(dir.file("w.safetensors")));
    }
};

// Whole-sequence forward against the reference, then (decoder mode) prefill P + decode steps
// against the same reference for P = 0, 1 and S/2.
void check_layer(SeedLayer &l, int64_t B, int64_t S, uint32_t seed) {
    const Tensor x = testing::random_tensor({B, S, l.config.hidden}, seed);
    const std::vector<double> expected = reference::latent_attention(l.ref, x);
    // BitLinear rounds activations: a float32 difference upstream may move one code (the golden
    // BitLinear case allows 1e-3 for the same reason).
    const double tolerance = l.config.bitnet ? 1e-3 : 1e-5;
    EXPECT_LE(testing::relative_l2(l.layer->forward(x), expected), tolerance) << "forward";
    if (!l.config.causal) return;
    for (int64_t P : {int64_t(0), int64_t(1), S / 2}) {
        LatentState state = l.layer->make_state(B, S);
        Tensor out({B, S, l.config.hidden});
        const int64_t E = l.config.hidden;
        auto place = [&](const Tensor &part, int64_t begin) {
            for (int64_t b = 0; b < B; b++)
                std::copy_n(part.data() + b * part.dim(1) * E, part.dim(1) * E, out.data() + (b * S + begin) * E);
        };
        if (P > 0) place(l.layer->prefill(x.tokens(0, P), state), 0);
        for (int64_t t = P; t < S; t++) place(l.layer->decode_step(x.tokens(t, t + 1), state), t);
        EXPECT_LE(testing::relative_l2(out, expected), tolerance) << "prefill " << P << " + decode";
    }
}

struct SwitchCase {
    std::string name;
    nlohmann::json config;  // over the CCA defaults at E = 64, H = 4
};
std::ostream &operator<<(std::ostream &os, const SwitchCase &c) { return os << c.name; }

class LatentSwitches : public ::testing::TestWithParam<SwitchCase> {};

TEST_P(LatentSwitches, MatchReferenceInForwardAndDecode) {
    nlohmann::json config = {{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}};
    config.update(GetParam().config);
    SeedLayer layer(config, false);
    check_layer(layer, 2, 11, 9);
}

// Each value of each switch at least once from the defaults, then pairwise mixes (conv layers x
// kernels x qk-mean x value shift x mode).
INSTANTIATE_TEST_SUITE_P(
    Switches, LatentSwitches,
    ::testing::Values(
        SwitchCase{"defaults", nlohmann::json::object()}, SwitchCase{"conv0", {{"cca_num_conv_layers", 0}}},
        SwitchCase{"conv1", {{"cca_num_conv_layers", 1}}}, SwitchCase{"kseq1", {{"cca_conv_kernel_seq", 1}}},
        SwitchCase{"kseq2", {{"cca_conv_kernel_seq", 2}}}, SwitchCase{"kseq3", {{"cca_conv_kernel_seq", 3}}},
        SwitchCase{"kseq5", {{"cca_conv_kernel_seq", 5}}}, SwitchCase{"kch1", {{"cca_conv_kernel_ch", 1}}},
        SwitchCase{"kch2", {{"cca_conv_kernel_ch", 2}}}, SwitchCase{"kch4", {{"cca_conv_kernel_ch", 4}}},
        SwitchCase{"kch5", {{"cca_conv_kernel_ch", 5}}}, SwitchCase{"no_qk_mean", {{"cca_qk_mean", false}}},
        SwitchCase{"no_value_shift", {{"cca_value_shift", false}}}, SwitchCase{"encoder", {{"mode", "encoder"}}},
        SwitchCase{"mix_conv1_noqkmean_encoder", {{"cca_num_conv_layers", 1}, {"cca_qk_mean", false}, {"mode", "encoder"}}},
        SwitchCase{"mix_conv0_noshift", {{"cca_num_conv_layers", 0}, {"cca_value_shift", false}}},
        SwitchCase{"mix_k5_1_noshift_encoder", {{"cca_conv_kernel_seq", 5}, {"cca_conv_kernel_ch", 1}, {"cca_value_shift", false}, {"mode", "encoder"}}},
        SwitchCase{"mix_k1_5_noqkmean", {{"cca_conv_kernel_seq", 1}, {"cca_conv_kernel_ch", 5}, {"cca_qk_mean", false}}},
        SwitchCase{"mix_conv1_k2_noshift", {{"cca_num_conv_layers", 1}, {"cca_conv_kernel_seq", 2}, {"cca_value_shift", false}}},
        SwitchCase{"mix_conv0_noqkmean_encoder", {{"cca_num_conv_layers", 0}, {"cca_qk_mean", false}, {"mode", "encoder"}}},
        SwitchCase{"mix_k3_4_encoder", {{"cca_conv_kernel_seq", 3}, {"cca_conv_kernel_ch", 4}, {"mode", "encoder"}}},
        SwitchCase{"mix_everything_off", {{"cca_num_conv_layers", 0}, {"cca_qk_mean", false}, {"cca_value_shift", false}}},
        SwitchCase{"bitnet", {{"use_bitnet", true}}},
        SwitchCase{"mix_bitnet_conv1_encoder", {{"use_bitnet", true}, {"cca_num_conv_layers", 1}, {"mode", "encoder"}}},
        SwitchCase{"mix_bitnet_noshift_noqkmean", {{"use_bitnet", true}, {"cca_value_shift", false}, {"cca_qk_mean", false}}}),
    [](const auto &info) { return info.param.name; });

// CCGQA with group sizes 1, 2, 4 and 8 (H = 8, dh = 4).
class LatentGroups : public ::testing::TestWithParam<int> {};

TEST_P(LatentGroups, MatchReference) {
    const int kv_heads = GetParam();
    nlohmann::json config = {{"hidden_size", 64}, {"num_heads", 8}, {"mode", "decoder"},
                             {"ccgqa_num_kv_heads", kv_heads}, {"ccgqa_query_latent_rank", 32},
                             {"ccgqa_kv_latent_rank", 4 * kv_heads}, {"ccgqa_value_shift", kv_heads % 2 == 0}};
    SeedLayer layer(config, true, 3);
    check_layer(layer, 1, 9, 10);
}
INSTANTIATE_TEST_SUITE_P(Groups, LatentGroups, ::testing::Values(8, 4, 2, 1),
                         [](const auto &info) { return "g" + std::to_string(8 / info.param); });

TEST(LatentShort, OneTokenAndShorterThanTheKernels) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}, {"cca_conv_kernel_seq", 5},
                     {"cca_conv_kernel_ch", 4}},
                    false, 5);
    check_layer(layer, 2, 1, 11);
    check_layer(layer, 1, 3, 12);
}

TEST(LatentState, CcgqaCachesTwoLkvFloatsPerToken) {
    SeedLayer layer({{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}}, true);
    const LatentState s = layer.layer->make_state(1, 100);
    const int64_t floats_per_token = (s.kv().keys().size() + s.kv().values().size()) / s.kv().capacity();
    EXPECT_EQ(floats_per_token * 4, 2 * layer.config.kv_rank() * 4);
    EXPECT_EQ(layer.config.kv_rank(), 16);  // E / 8
}

// On a GPU a CCGQA decode step moves only x up, and y, the new K and V rows and the rows of the
// state down: every intermediate result stays on the device, BitLinear's quantised activations
// too. The latent widths keep every row the step writes aligned for OpenCL
// sub-buffers.
class LatentOnGpu : public testing::OnEachGpu {
protected:
    void check_decode_transfers(bool bitnet) {
        const nlohmann::json config = {{"hidden_size", 64},           {"num_heads", 4},
                                       {"mode", "decoder"},           {"ccgqa_num_kv_heads", 2},
                                       {"ccgqa_query_latent_rank", 128}, {"ccgqa_kv_latent_rank", 64},
                                       {"ccgqa_value_shift", true},   {"use_bitnet", bitnet}};
        SeedLayer gpu(config, true, 7), cpu(config, true, 7);
        const int64_t B = 2, E = 64, Lkv = gpu.config.kv_rank(), P = gpu.config.packed(), hist = gpu.config.history();
        LatentState gpu_state = gpu.layer->make_state(B, 16), cpu_state = cpu.layer->make_state(B, 16);
        const Tensor prompt = testing::random_tensor({B, 5, E}, 71);
        cpu.layer->prefill(prompt, cpu_state);
        {
            const testing::OnDevice on(GetParam());
            gpu.layer->prefill(prompt, gpu_state);
        }
        for (int step = 0; step < 4; step++) {
            const Tensor x = testing::random_tensor({B, 1, E}, 72 + step);
            const Tensor expected = cpu.layer->decode_step(x, cpu_state);
            const testing::OnDevice on(GetParam());
            const detail::Transfers before = detail::data_transfers();
            const Tensor got = gpu.layer->decode_step(x, gpu_state);
            const detail::Transfers after = detail::data_transfers();
            EXPECT_LE(testing::relative_l2(got, expected), 1e-5) << "step " << step;
            if (step == 0) continue;  // the RoPE table grew to cover position 6: uploaded again
            const int64_t f = sizeof(float);
            EXPECT_EQ(after.uploaded - before.uploaded, B * E * f) << "step " << step << " uploaded more than x";
            // The new history rows reach the host state from the step's packed rows, fetched whole
            // (the history before them too: one contiguous download).
            EXPECT_EQ(after.downloaded - before.downloaded, (B * E + 2 * B * Lkv + B * (hist + 1) * P + B * Lkv / 2) * f)
                << "step " << step << " downloaded more than y, the new K and V rows and the step's state rows";
        }
        EXPECT_LE(testing::relative_l2(gpu_state.qk_history(), cpu_state.qk_history()), 1e-6);
        EXPECT_LE(testing::relative_l2(gpu_state.prev_value(), cpu_state.prev_value()), 1e-5);
    }
};

TEST_P(LatentOnGpu, ADecodeStepMovesOnlyItsInputOutputAndNewState) { check_decode_transfers(false); }
TEST_P(LatentOnGpu, ABitLinearDecodeStepMovesOnlyItsInputOutputAndNewState) { check_decode_transfers(true); }

// A latent layer's decode calls, for the checks of tests/support/stateful_layer.h.
testing::StatefulLayer<LatentState> stateful(const LatentAttention &layer) {
    return {[&layer](int64_t batch, int64_t capacity) { return layer.make_state(batch, capacity); },
            [&layer](const Tensor &x, LatentState &s) { return layer.prefill(x, s); },
            [&layer](const Tensor &x, LatentState &s) { return layer.decode_step(x, s); }};
}

// Threads on a GPU share the layer and even one input tensor: the calls share its device region,
// which lives until the last of them ends (the first to end took it down under the others).
TEST_P(LatentOnGpu, ThreadsShareTheLayerAndTheInput) {
    SeedLayer layer({{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}}, true);
    const Tensor x = testing::random_tensor({2, 9, 128}, 43);
    const testing::OnDevice on(GetParam());
    const Tensor expected = layer.layer->forward(x);
    std::vector<double> worst(4, 0.0);
    std::vector<std::string> errors(4);
    std::vector<std::thread> pool;
    for (int i = 0; i < 4; i++) {
        pool.emplace_back([&, i] {
            try {
                for (int n = 0; n < 5; n++) worst[i] = std::max(worst[i], testing::relative_l2(layer.layer->forward(x), expected));
            } catch (const std::exception &e) {
                errors[i] = e.what();
            }
        });
    }
    for (std::thread &t : pool) t.join();
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(errors[i], "") << "thread " << i;
        EXPECT_LE(worst[i], 1e-6) << "thread " << i;
    }
}

// The assigned rows (cache, history, shifted value) are host writes that must reach the device.
TEST_P(LatentOnGpu, ASequencePrefilledElsewhereTakesAFinishedOnesSlot) {
    SeedLayer layer({{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}}, true);
    const testing::OnDevice on(GetParam());
    EXPECT_LE(testing::continuous_batching_error(stateful(*layer.layer), 128, 41), 1e-5);
}

// A bf16 layer with an int8 latent cache on a GPU: the CPU's result within the types' cost (the
// device's exp differs, and a value near a rounding boundary may round the other way), and not
// the float32 layer's, so the GPU path rounds too.
TEST_P(LatentOnGpu, TypedLayerMatchesTheCpu) {
    SeedLayer typed({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false, 1, {DType::BF16, DType::Int8});
    SeedLayer plain({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false, 1);
    Tensor x = testing::random_tensor({1, 9, 64}, 1);
    round_to(DType::BF16, x.data(), x.size());
    const auto through_state = [&](const LatentAttention &layer) {
        LatentState s = layer.make_state(1, 9);
        Tensor out({1, 9, 64});
        const Tensor first = layer.prefill(x.tokens(0, 5), s);
        std::copy_n(first.data(), first.size(), out.data());
        for (int64_t t = 5; t < 9; t++) {
            const Tensor y = layer.decode_step(x.tokens(t, t + 1), s);
            std::copy_n(y.data(), y.size(), out.data() + t * 64);
        }
        return out;
    };
    const Tensor cpu = through_state(*typed.layer), f32 = through_state(*plain.layer);
    const testing::OnDevice on(GetParam());
    const Tensor gpu = through_state(*typed.layer);
    EXPECT_LE(testing::relative_l2(gpu, cpu), 1e-2);
    EXPECT_GT(testing::relative_l2(gpu, f32), 1e-4);
}

HATTN_INSTANTIATE_ON_EACH_GPU(LatentOnGpu);

TEST(LatentState, FailedCallLeavesTheStateUnchanged) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false);
    LatentState s = layer.layer->make_state(1, 4);
    layer.layer->prefill(testing::random_tensor({1, 3, 64}, 1), s);
    const Tensor history = s.qk_history(), prev = s.prev_value();
    EXPECT_THROW(layer.layer->prefill(testing::random_tensor({1, 2, 64}, 2), s), Error);
    EXPECT_EQ(s.kv().lengths(), std::vector<int32_t>({3}));
    EXPECT_EQ(s.qk_history().values(), history.values());
    EXPECT_EQ(s.prev_value().values(), prev.values());
}

// A state belongs to the layer that made it. A layer with value shift has a row of delayed
// values that one without lacks, and a layer of the same shape but other weights would read rows
// (and a first delayed value) that are not its own: each layer refuses the other's state, which
// stays as it was. A copy of a layer holds the same weights and takes its states.
TEST(LatentState, AStateOfAnotherLayerIsRefused) {
    const nlohmann::json json{{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}};
    SeedLayer shift(json, false), same_shape(json, false, 11);
    SeedLayer no_shift({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}, {"cca_value_shift", false}}, false);
    LatentState without = no_shift.layer->make_state(1, 6), with = shift.layer->make_state(1, 6);
    const Tensor token = testing::random_tensor({1, 1, 64}, 1);
    const std::string message = testing::error_message([&] { shift.layer->decode_step(token, without); });
    EXPECT_EQ(message,
              "latent attention: the state was made by another layer (a layer takes only the states its make_state "
              "made)");
    EXPECT_THROW(no_shift.layer->decode_step(token, with), Error);
    EXPECT_THROW(same_shape.layer->decode_step(token, with), Error);
    EXPECT_EQ(without.kv().lengths(), std::vector<int32_t>({0}));
    EXPECT_EQ(with.kv().lengths(), std::vector<int32_t>({0}));
    LatentState same_shape_state = same_shape.layer->make_state(1, 6);
    EXPECT_EQ(testing::error_message([&] { with.assign_sequence(0, same_shape_state); }),
              "latent state: cannot take a sequence from a state another layer made");
    EXPECT_THROW(with.assign_sequence(0, without), Error);
    const LatentAttention copy = *shift.layer;
    EXPECT_EQ(copy.decode_step(token, with).shape(), Shape({1, 1, 64}));
    EXPECT_EQ(with.kv().lengths(), std::vector<int32_t>({1}));
}

TEST(LatentState, NoTokensChangeNothing) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false);
    EXPECT_EQ(layer.layer->forward(Tensor({2, 0, 64})).shape(), Shape({2, 0, 64}));
    EXPECT_EQ(layer.layer->forward(Tensor({0, 3, 64})).shape(), Shape({0, 3, 64}));
    LatentState s = layer.layer->make_state(2, 4);
    layer.layer->prefill(testing::random_tensor({2, 3, 64}, 1), s);
    const Tensor history = s.qk_history(), prev = s.prev_value();
    EXPECT_EQ(layer.layer->prefill(Tensor({2, 0, 64}), s).shape(), Shape({2, 0, 64}));
    EXPECT_EQ(s.kv().lengths(), std::vector<int32_t>({3, 3}));
    EXPECT_EQ(s.qk_history().values(), history.values());
    EXPECT_EQ(s.prev_value().values(), prev.values());
}

using testing::sequence;

TEST(LatentState, NonFiniteInputIsRefusedAndChangesNothing) {
    SeedLayer layer({{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}}, true);
    double divergence = 1;
    EXPECT_EQ(testing::non_finite_input_messages(stateful(*layer.layer), 128, 44, divergence),
              std::vector<std::string>({"latent attention: input: element 133 is NaN; inputs must be finite",
                                        "latent attention: input: element 3 is infinite; inputs must be finite"}));
    EXPECT_LE(divergence, 1e-6);
}

TEST(LatentState, AnOverflowIsRefusedAndChangesNothing) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false);
    double divergence = 1;
    for (const std::string &message : testing::overflowing_input_messages(stateful(*layer.layer), 64, 45, divergence)) {
        testing::expect_contains(message, "latent attention: the values overflowed float32 (element 0 is");
        testing::expect_contains(message, "the input's largest magnitude is 3e+38, the largest weight");
    }
    EXPECT_LE(divergence, 1e-6);
}

TEST(LatentAttentionThreads, OneLayerServesThreadsThatEachHaveAState) {
    SeedLayer layer({{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}}, true);
    EXPECT_LE(testing::shared_by_threads_error(stateful(*layer.layer), 128, 42), 1e-6);
}

TEST(LatentState, ASequencePrefilledElsewhereTakesAFinishedOnesSlot) {
    for (bool grouped : {false, true}) {
        SeedLayer layer({{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}}, grouped);
        EXPECT_LE(testing::continuous_batching_error(stateful(*layer.layer), 128, 40), 1e-6) << "grouped " << grouped;
    }
}

// Reset rewinds the convolution history and the shifted value with the cache (it once rewound only
// the cache, and later tokens convolved rows of the old sequence).
TEST(LatentState, ResetStartsOverAsANewState) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false);
    const Tensor before = testing::random_tensor({2, 3, 64}, 1), x = testing::random_tensor({2, 4, 64}, 2);
    LatentState fresh = layer.layer->make_state(2, 8);
    const Tensor expected = layer.layer->prefill(x, fresh);
    LatentState s = layer.layer->make_state(2, 8);
    const LatentState untouched = s;
    layer.layer->prefill(before, s);
    s.reset();
    EXPECT_EQ(s.lengths(), std::vector<int32_t>({0, 0}));
    EXPECT_EQ(s.qk_history().values(), untouched.qk_history().values());
    EXPECT_EQ(s.prev_value().values(), untouched.prev_value().values());
    EXPECT_LE(testing::relative_l2(layer.layer->prefill(x, s), expected), 1e-6);
}

TEST(LatentState, ResetOneSequenceLeavesTheOther) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false);
    const Tensor before = testing::random_tensor({2, 3, 64}, 3), x = testing::random_tensor({2, 2, 64}, 4);
    LatentState s = layer.layer->make_state(2, 8);
    layer.layer->prefill(before, s);
    s.reset(1);
    EXPECT_EQ(s.lengths(), std::vector<int32_t>({3, 0}));
    const Tensor y = layer.layer->prefill(x, s);  // sequence 0 continues, sequence 1 starts over
    LatentState kept = layer.layer->make_state(1, 8), restarted = layer.layer->make_state(1, 8);
    layer.layer->prefill(sequence(before, 0), kept);
    EXPECT_LE(testing::relative_l2(sequence(y, 0), layer.layer->prefill(sequence(x, 0), kept)), 1e-6);
    EXPECT_LE(testing::relative_l2(sequence(y, 1), layer.layer->prefill(sequence(x, 1), restarted)), 1e-6);
}

TEST(LatentState, AForkContinuesAsItsSource) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false);
    const Tensor before = testing::random_tensor({2, 5, 64}, 5), token = testing::random_tensor({1, 1, 64}, 6);
    LatentState s = layer.layer->make_state(2, 8);
    layer.layer->prefill(before, s);
    s.fork(0, 1);
    Tensor both({2, 1, 64});
    std::copy_n(token.data(), 64, both.data());
    std::copy_n(token.data(), 64, both.data() + 64);
    const Tensor y = layer.layer->decode_step(both, s);
    LatentState alone = layer.layer->make_state(1, 8);
    layer.layer->prefill(sequence(before, 0), alone);
    const Tensor expected = layer.layer->decode_step(token, alone);
    EXPECT_LE(testing::relative_l2(sequence(y, 0), expected), 1e-6);
    EXPECT_LE(testing::relative_l2(sequence(y, 1), expected), 1e-6);
}

TEST(LatentState, SequencesOutsideTheBatchAreRefused) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false);
    LatentState s = layer.layer->make_state(2, 8);
    layer.layer->prefill(testing::random_tensor({2, 3, 64}, 7), s);
    const LatentState before = s;
    EXPECT_EQ(testing::error_message([&] { s.reset(2); }), "latent state: sequence 2 outside batch 2");
    EXPECT_THROW(s.reset(-1), Error);
    EXPECT_THROW(s.fork(0, 2), Error);
    SeedLayer wider({{"hidden_size", 64}, {"num_heads", 8}, {"mode", "decoder"}}, false);
    EXPECT_THROW(s.assign_sequence(0, wider.layer->make_state(1, 8), 0), Error);
    EXPECT_THROW(s.assign_sequence(0, layer.layer->make_state(1, 8), 1), Error);
    LatentState longer = layer.layer->make_state(1, 16);
    layer.layer->prefill(testing::random_tensor({1, 9, 64}, 8), longer);
    EXPECT_THROW(s.assign_sequence(0, longer, 0), Error);  // 9 tokens do not fit a capacity of 8
    EXPECT_EQ(s.lengths(), before.lengths());
    EXPECT_EQ(s.qk_history().values(), before.qk_history().values());
    EXPECT_EQ(s.prev_value().values(), before.prev_value().values());
}

TEST(LatentState, EncoderModeHasNoDecode) {
    SeedLayer encoder({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "encoder"}}, false);
    EXPECT_EQ(testing::error_message([&] { encoder.layer->make_state(1, 4); }),
              "latent attention: make_state needs mode decoder: decode is causal by nature");
    SeedLayer decoder({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false);
    LatentState s = decoder.layer->make_state(1, 4);  // an encoder given a decoder's state
    EXPECT_EQ(testing::error_message([&] { encoder.layer->prefill(testing::random_tensor({1, 2, 64}, 1), s); }),
              "latent attention: prefill needs mode decoder: decode is causal by nature");
    EXPECT_THROW(encoder.layer->decode_step(testing::random_tensor({1, 1, 64}, 1), s), Error);
    EXPECT_EQ(testing::error_message([&] { decoder.layer->make_state(-2, 4); }),
              "latent state: batch and capacity must be positive, got batch -2, capacity 4");
}

// ---------------------------------------------------------------- storage types

// Prefill P tokens then decode the rest, one token at a time; the outputs as one [B, S, E] tensor.
Tensor prefill_then_decode(const LatentAttention &layer, const Tensor &x, int64_t P) {
    const int64_t B = x.dim(0), S = x.dim(1), E = x.dim(2);
    LatentState state = layer.make_state(B, S);
    Tensor out({B, S, E});
    const auto place = [&](const Tensor &part, int64_t begin) {
        for (int64_t b = 0; b < B; b++)
            std::copy_n(part.data() + b * part.dim(1) * E, part.dim(1) * E, out.data() + (b * S + begin) * E);
    };
    if (P > 0) place(layer.prefill(x.tokens(0, P), state), 0);
    for (int64_t t = P; t < S; t++) place(layer.decode_step(x.tokens(t, t + 1), state), t);
    return out;
}

struct StorageCase {
    std::string name;
    nlohmann::json config;  // over {hidden_size 128, num_heads 8, mode decoder}
    bool grouped;
    StorageTypes types;
    // What the storage types may cost: bf16 keeps 8 significant bits, f16 11.
    double tolerance;
};
std::ostream &operator<<(std::ostream &os, const StorageCase &c) { return os << c.name; }

class LatentStorage : public ::testing::TestWithParam<StorageCase> {};

// Rounded where stored, the layer stays within the types' cost of the float64 reference (on the
// same dtype-valued weights and input), and prefill + decode through a state of kv_dtype rows
// equals the forward within it too.
TEST_P(LatentStorage, ForwardAndDecodeStayWithinTheTypesCost) {
    const StorageCase &c = GetParam();
    nlohmann::json json = {{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}};
    json.update(c.config);
    SeedLayer layer(json, c.grouped, 21, c.types);
    EXPECT_EQ(layer.layer->storage_types().dtype, c.types.dtype);
    EXPECT_EQ(layer.layer->storage_types().kv_dtype, c.types.kv_dtype);
    const int64_t B = 2, S = 13;
    Tensor x = testing::random_tensor({B, S, 128}, 22);
    round_to(c.types.dtype, x.data(), x.size());
    const Tensor y = layer.layer->forward(x);
    EXPECT_LE(testing::relative_l2(y, reference::latent_attention(layer.ref, x)), c.tolerance) << "forward";
    // Against the reference rounded where the layer stores, in one type: only values a unit in the
    // last place apart (test_storage_types.cpp's bound).
    if (c.types.dtype != DType::F32 && c.types.kv_dtype == c.types.dtype) {
        reference::LatentWeights rounded = layer.ref;
        rounded.dtype = c.types.dtype;
        const double e = testing::relative_l2(y, reference::latent_attention(rounded, x));
        EXPECT_LE(e, 5e-4) << "forward, against the rounded reference";
        EXPECT_GT(testing::relative_l2(y, reference::latent_attention(layer.ref, x)), 4 * e);
    }
    for (int64_t P : {int64_t(0), int64_t(1), S / 2}) {
        EXPECT_LE(testing::relative_l2(prefill_then_decode(*layer.layer, x, P), y), c.tolerance)
            << "prefill " << P << " + decode";
    }
    const LatentState state = layer.layer->make_state(B, S);
    EXPECT_EQ(state.kv().dtype(), c.types.kv_dtype);
}

INSTANTIATE_TEST_SUITE_P(
    Types, LatentStorage,
    ::testing::Values(StorageCase{"cca_bf16", nlohmann::json::object(), false, {DType::BF16, DType::BF16}, 2e-2},
                      StorageCase{"cca_f16", nlohmann::json::object(), false, {DType::F16, DType::F16}, 3e-3},
                      StorageCase{"ccgqa_bf16", nlohmann::json::object(), true, {DType::BF16, DType::BF16}, 2e-2},
                      StorageCase{"ccgqa_f16", nlohmann::json::object(), true, {DType::F16, DType::F16}, 3e-3},
                      StorageCase{"ccgqa_f32_kv_bf16", nlohmann::json::object(), true, {DType::F32, DType::BF16}, 2e-2},
                      StorageCase{"ccgqa_bf16_kv_f32", nlohmann::json::object(), true, {DType::BF16, DType::F32}, 2e-2},
                      StorageCase{"cca_noshift_conv1_f16", {{"cca_value_shift", false}, {"cca_num_conv_layers", 1}}, false,
                                  {DType::F16, DType::F16}, 3e-3},
                      StorageCase{"cca_bitnet_bf16", {{"use_bitnet", true}}, false, {DType::BF16, DType::BF16}, 2e-2},
                      // int8 latent caches (the golden kvint8 cases' 4e-2)
                      StorageCase{"cca_f32_kv_int8", nlohmann::json::object(), false, {DType::F32, DType::Int8}, 4e-2},
                      StorageCase{"ccgqa_bf16_kv_int8", nlohmann::json::object(), true, {DType::BF16, DType::Int8}, 4e-2}),
    [](const auto &info) { return info.param.name; });

// The rounding really happens: the same bf16-valued weights and input give another output in
// bf16 than in f32.
TEST(LatentStorageTypes, Bf16DiffersFromF32) {
    const nlohmann::json json = {{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}};
    for (bool grouped : {false, true}) {
        SeedLayer bf16(json, grouped, 23, {DType::BF16, DType::BF16});
        LatentAttentionConfig f32_config = bf16.config;
        f32_config.storage = {};
        const LatentAttention f32 = SeedLayer::build(f32_config, bf16.tensors);
        Tensor x = testing::random_tensor({2, 9, 128}, 24);
        round_to(DType::BF16, x.data(), x.size());
        const Tensor y32 = f32.forward(x), y16 = bf16.layer->forward(x);
        EXPECT_GT(testing::relative_l2(y16, y32), 1e-4) << "grouped " << grouped;
        for (float v : y16.values()) ASSERT_EQ(v, round_to(DType::BF16, v)) << "the output is returned in bf16";
    }
}

// The calls over typed activations: a caller's bf16 memory in, the output in the layer's dtype,
// bit for bit the float32 calls' over the same values (forward, prefill and decode alike).
TEST(LatentStorageTypes, TypedCallsReturnTheDtype) {
    const nlohmann::json json = {{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}};
    for (DType dtype : {DType::BF16, DType::F16}) {
        SCOPED_TRACE(type_name(dtype));
        SeedLayer layer(json, true, 25, {dtype, dtype});
        const LatentAttention &l = *layer.layer;
        const StoredTensor x = StoredTensor::rounded(DType::BF16, testing::random_tensor({2, 7, 128}, 26).view());
        const Tensor x32 = x.widened();
        const StoredTensor y = l.forward(x.view());
        EXPECT_EQ(y.dtype(), dtype);
        EXPECT_EQ(y.bytes(), y.size() * 2);
        EXPECT_EQ(testing::relative_l2(y.widened(), l.forward(x32)), 0.0);
        LatentState typed = l.make_state(2, 7), plain = l.make_state(2, 7);
        EXPECT_EQ(testing::relative_l2(l.prefill(x.view().crop(1, 0, 6), typed).widened(), l.prefill(x32.tokens(0, 6), plain)),
                  0.0);
        const StoredTensor step = l.decode_step(x.view().crop(1, 6, 7), typed);
        EXPECT_EQ(step.dtype(), dtype);
        EXPECT_EQ(testing::relative_l2(step.widened(), l.decode_step(x32.tokens(6, 7), plain)), 0.0);
    }
}

// A bf16 or f16 cache holds 2 bytes a value: half the f32 cache's bytes; 16-bit weights half too.
TEST(LatentStorageTypes, SixteenBitCachesAndWeightsTakeHalfTheBytes) {
    const nlohmann::json json = {{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}};
    SeedLayer f32(json, true), bf16(json, true, 1, {DType::BF16, DType::BF16});
    SeedLayer f16_kv(json, true, 1, {DType::F32, DType::F16});
    const int64_t Lkv = f32.config.kv_rank();
    EXPECT_EQ(f32.layer->cache_bytes_per_token(), 2 * Lkv * 4);
    EXPECT_EQ(bf16.layer->cache_bytes_per_token(), 2 * Lkv * 2);
    EXPECT_EQ(f16_kv.layer->cache_bytes_per_token(), 2 * Lkv * 2);
    EXPECT_EQ(f16_kv.layer->weight_bytes(), f32.layer->weight_bytes());
    // The projections' weights halve; the convolutions' (a few floats per channel) stay float32.
    const int64_t E = 128, P = f32.config.packed(), Lq = f32.config.query_rank();
    const int64_t projections = (P * E + Lkv * E + E * Lq) * 4;
    EXPECT_EQ(f32.layer->weight_bytes() - bf16.layer->weight_bytes(), projections / 2);
}

// 16-bit caches move between states like f32 ones (continuous batching).
TEST(LatentStorageTypes, ASequencePrefilledElsewhereTakesAFinishedOnesSlot) {
    SeedLayer layer({{"hidden_size", 128}, {"num_heads", 8}, {"mode", "decoder"}}, true, 1, {DType::BF16, DType::BF16});
    EXPECT_LE(testing::continuous_batching_error(stateful(*layer.layer), 128, 46), 1e-6);
}

// An int8 latent cache holds dh codes and a float32 scale per token and KV head.
TEST(LatentStorageTypes, Int8CachesHoldCodesAndScales) {
    SeedLayer layer({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "decoder"}}, false, 1, {DType::F32, DType::Int8});
    const LatentAttentionConfig &c = layer.layer->config();
    EXPECT_EQ(layer.layer->cache_bytes_per_token(), 2 * c.kv_heads * (c.head_dim + 4));
    EXPECT_EQ(layer.layer->make_state(1, 4).kv_without_history().dtype(), DType::Int8);
}

// ---------------------------------------------------------------- validation

std::string cca_error(const nlohmann::json &json, bool grouped) {
    try {
        LatentAttentionConfig::cca(testing::config_of(json), grouped);
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

TEST(LatentConfig, EachRuleNamesItsKeys) {
    auto has = [](const std::string &message, const std::string &what) {
        return message.find(what) != std::string::npos;
    };
    EXPECT_TRUE(has(cca_error({{"hidden_size", 65}, {"num_heads", 4}}, false), "hidden_size (65)"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 8}, {"ccgqa_num_kv_heads", 3}}, true), "ccgqa_num_kv_heads (3)"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"cca_latent_rank", 18}}, false), "cca_latent_rank (18)"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"ccgqa_num_kv_heads", 2}, {"ccgqa_kv_latent_rank", 9}}, true), "ccgqa_kv_latent_rank (9)"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"ccgqa_num_kv_heads", 4}, {"ccgqa_query_latent_rank", 16}, {"ccgqa_kv_latent_rank", 32}}, true), "must not exceed"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"ccgqa_num_kv_heads", 2}, {"ccgqa_query_latent_rank", 32}, {"ccgqa_kv_latent_rank", 8}}, true), "head dims differ"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"cca_latent_rank", 12}}, false), "must be even"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"cca_latent_rank", 0}}, false),
                    "cca_latent_rank must be positive, got 0"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"ccgqa_kv_latent_rank", -8}}, true),
                    "ccgqa_kv_latent_rank must be positive, got -8"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"cca_num_conv_layers", 3}}, false), "cca_num_conv_layers"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"cca_conv_kernel_seq", 0}}, false), "cca_conv_kernel_seq"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"cca_conv_kernel_ch", 0}}, false), "cca_conv_kernel_ch"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 8}, {"ccgqa_num_kv_heads", 1}, {"ccgqa_kv_latent_rank", 4}}, true), "value_shift"));
    EXPECT_TRUE(has(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"mode", "bidirectional"}}, false), "mode"));
    EXPECT_EQ(cca_error({{"hidden_size", 64}, {"num_heads", 4}, {"dropout", 0.1}, {"whatever", 1}}, false), "");
}

TEST(LatentConfig, MissingWeightIsNamed) {
    testing::TempDir dir;
    write_safetensors(dir.file("w.safetensors"), {{"temp", Tensor({1})}});
    const auto config = LatentAttentionConfig::cca(testing::config_of({{"hidden_size", 64}, {"num_heads", 4}}, "c"), false);
    try {
        LatentAttention layer(config, Weights::open(dir.file("w.safetensors")));
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("linear_qk.weight"), std::string::npos) << e.what();
    }
}

// A config built by hand skips cca()'s and zaya()'s checks: validate() names the field, and the
// layer calls it before reading a weight (the weights here are of no layer at all).
TEST(LatentConfig, AHandBuiltConfigIsChecked) {
    const LatentAttentionConfig seed = LatentAttentionConfig::cca(testing::config_of({{"hidden_size", 64},
                                                                                      {"num_heads", 4},
                                                                                      {"ccgqa_num_kv_heads", 2},
                                                                                      {"ccgqa_query_latent_rank", 16},
                                                                                      {"ccgqa_kv_latent_rank", 8}}),
                                                                  true);
    const LatentAttentionConfig zaya = LatentAttentionConfig::zaya(testing::config_of({{"hidden_size", 256}}));
    EXPECT_NO_THROW(zaya.validate());
    testing::TempDir dir;
    write_safetensors(dir.file("w.safetensors"), {{"unrelated", Tensor({1})}});
    const auto build = [&](const LatentAttentionConfig &c) {
        LatentAttention(c, Weights::open(dir.file("w.safetensors")));
    };
    testing::expect_each_change_refused<LatentAttentionConfig>(
        seed,
        {
            {[](auto &c) { c.kv_heads = 3; },
             "hidden=64 heads=4 kv_heads=3 head_dim=4: each must be positive, and heads a multiple of kv_heads"},
            {[](auto &c) { c.head_dim = 0; },
             "hidden=64 heads=4 kv_heads=2 head_dim=0: each must be positive, and heads a multiple of kv_heads"},
            {[](auto &c) { c.num_conv_layers = 3; }, "num_conv_layers must be 0, 1 or 2, got 3"},
            {[](auto &c) { c.conv_kernel_ch = 0; },
             "conv_kernel_seq and conv_kernel_ch must be at least 1, got 4 and 0"},
            {[](auto &c) { c.kv_heads = 1, c.head_dim = 3, c.rotary_dim = 2; },
             "value_shift needs an even kv_heads * head_dim, got 3"},
            {[](auto &c) { c.rotary_dim = 6; }, "rotary_dim must be even and in 2..head_dim (4), got 6"},
            {[](auto &c) { c.rotary_dim = 3; }, "rotary_dim must be even and in 2..head_dim (4), got 3"},
            {[](auto &c) { c.rope_base = 0; }, "rope_base must be positive, got 0.000000"},
            {[](auto &c) { c.norm_eps = 0; }, "norm_eps must be positive, got 0.000000"},
            {[](auto &c) { c.bias = true; }, "the seed's CCA and CCGQA projections have no biases"},
        },
        "latent_attention", build);
    for (const auto &change : std::vector<std::function<void(LatentAttentionConfig &)>>{
             [](auto &c) { c.num_conv_layers = 1; }, [](auto &c) { c.value_shift = false; },
             [](auto &c) { c.bitnet = true; }}) {
        LatentAttentionConfig c = zaya;
        change(c);
        EXPECT_EQ(testing::error_message([&] { c.validate(); }),
                  "latent_attention: ZAYA1's layer has two convolutions, the value shift and no BitLinear");
    }
}

TEST(ZayaConfig, KeysDefaultsAndRejections) {
    const auto zaya = [](const nlohmann::json &json) { return LatentAttentionConfig::zaya(testing::config_of(json)); };
    const LatentAttentionConfig c = zaya({{"hidden_size", 1024}, {"rope_parameters", {{"hybrid", {{"rope_theta", 1e6}}}}}});
    EXPECT_EQ(c.heads, 8);
    EXPECT_EQ(c.kv_heads, 2);
    EXPECT_EQ(c.head_dim, 128);
    EXPECT_EQ(c.rotary_dim, 64);  // partial_rotary_factor 0.5
    EXPECT_EQ(c.rope_base, 1e6);  // transformers 5 nests it
    EXPECT_EQ(zaya({{"hidden_size", 64}, {"rope_theta", 7.0}}).rope_base, 7.0);
    EXPECT_EQ(zaya({{"hidden_size", 64}, {"rope_parameters", {{"rope_theta", 9.0}}}}).rope_base, 9.0);  // flat
    auto error = [&](const nlohmann::json &json) {
        try {
            zaya(json);
        } catch (const Error &e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error({{"hidden_size", 64}, {"layer_type", "hybrid_sliding"}}).find("hybrid_sliding"), std::string::npos);
    EXPECT_NE(error({{"hidden_size", 64}, {"num_attention_heads", 6}, {"num_key_value_heads", 4}}).find("divisible"),
              std::string::npos);
    EXPECT_NE(error({{"hidden_size", 64}, {"head_dim", 16}, {"partial_rotary_factor", 0.1}}).find("partial_rotary_factor"),
              std::string::npos);
    EXPECT_NE(error({{"hidden_size", 64}, {"partial_rotary_factor", 1e300}}).find("partial_rotary_factor must be in (0, 1]"),
              std::string::npos);
    EXPECT_EQ(error({{"hidden_size", 64}, {"rope_parameters", {{"hybrid", {{"rope_theta", "abc"}}}}}}),
              "config.json (rope_parameters.hybrid): key 'rope_theta' must be a number, got \"abc\"");
    EXPECT_EQ(error({{"hidden_size", 64}, {"rope_parameters", {{"hybrid", 3}}}}),
              "config.json (rope_parameters): key 'hybrid' must be an object, got 3");
    EXPECT_EQ(error({{"hidden_size", 64}, {"rope_parameters", {{"hybrid", {{"rope_type", "yarn"}, {"rope_theta", 1e6}}}}}}),
              "config.json (rope_parameters.hybrid): rope_type 'yarn' is not supported (default only)");
    EXPECT_EQ(error({{"hidden_size", 64}, {"rope_theta", 5e6}, {"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}}),
              "config.json (rope_scaling): rope_type 'linear' is not supported (default only)");
}

// ---------------------------------------------------------------- the kernel on its own

double qk_latent_error(int64_t H, int64_t Hkv, int64_t dh, int64_t k0, int64_t k1, int64_t S, uint32_t seed) {
    reference::LatentWeights w{};
    w.H = H, w.Hkv = Hkv, w.dh = dh, w.conv_layers = 2, w.k0 = k0, w.k1 = k1, w.qk_mean = true;
    w.rotary_dim = dh, w.rope_base = 10000.0, w.eps = 1e-6;
    const int64_t P = (H + Hkv) * dh, pad = (k0 - 1) + (k1 - 1);
    w.w0 = scaled({P, 1, k0}, seed, 0.6f);
    w.w1 = scaled({P, dh, k1}, seed + 1, 0.3f);
    w.b0 = scaled({P}, seed + 2, 0.1f);
    w.b1 = scaled({P}, seed + 3, 0.1f);
    w.key_scale.assign(Hkv, 1.3);
    const Tensor qk = testing::random_tensor({S, P}, seed + 4);
    Tensor rows({1, pad + S, P});  // zero history, then the sequence
    std::copy_n(qk.data(), S * P, rows.data() + pad * P);
    const RopeTable rope(dh, 10000.0, S);
    Tensor q({1, S, H, dh}), k({1, S, Hkv, dh});
    cca_qk_latent(rows.view(), {w.w0, *w.b0, cca_grouped_by_output(w.w1), *w.b1}, Tensor({Hkv}, std::vector<float>(Hkv, 1.3f)), rope, {0}, true, 1e-6f,
                  q.view(), k.view());
    std::vector<double> rq, rk;
    latent_qk(w, {qk.values().begin(), qk.values().end()}, S, rq, rk);
    rq.insert(rq.end(), rk.begin(), rk.end());
    Tensor both({q.size() + k.size()});
    std::copy_n(q.data(), q.size(), both.data());
    std::copy_n(k.data(), k.size(), both.data() + q.size());
    return testing::relative_l2(both, rq);
}

TEST(CcaQkLatent, MatchesReference) { EXPECT_LE(qk_latent_error(8, 2, 16, 4, 3, 13, 40), 1e-5); }

// A small CCGQA case for the kernel's own checks: H = 4, Hkv = 2, dh = 8, k0 = 3, k1 = 2, S = 3.
struct QkLatentCall {
    int64_t H = 4, Hkv = 2, dh = 8, S = 3;
    CcaConvWeights conv{scaled({48, 1, 3}, 1, 0.6f), Tensor({48}), cca_grouped_by_output(scaled({48, 8, 2}, 2, 0.3f)),
                        Tensor({48})};
    Tensor rows = scaled({1, 3 + 3, 48}, 3, 1.0f), key_scale = Tensor({2}, {1.0f, 1.0f});
    Tensor q = Tensor({1, 3, 4, 8}), k = Tensor({1, 3, 2, 8});
    void run(const RopeTable &rope, std::vector<int32_t> start, float eps = 1e-6f) {
        cca_qk_latent(rows.view(), conv, key_scale, rope, start, true, eps, q.view(), k.view());
    }
};

// A table of rows from a later position is read by position, as apply_rope reads it.
TEST(CcaQkLatent, ReadsATableOfRowsByPosition) {
    QkLatentCall whole, rows;
    whole.run(RopeTable(8, 10000.0, 20), {12});
    rows.run(RopeTable::rows(rope_frequencies(8, 10000.0), 10, 20), {12});
    EXPECT_EQ(rows.q.values(), whole.q.values());
    EXPECT_EQ(rows.k.values(), whole.k.values());
    EXPECT_EQ(testing::error_message([&] { rows.run(RopeTable::rows(rope_frequencies(8, 10000.0), 10, 20), {9}); }),
              "cca: positions 9 to 12 are outside the table's 10 to 20");
}

TEST(CcaQkLatent, RefusesWhatDoesNotFit) {
    const RopeTable rope(8, 10000.0, 20);
    QkLatentCall c;
    EXPECT_EQ(testing::error_message([&] { c.run(RopeTable(10, 10000.0, 20), {0}); }),
              "cca: rotary dimension 10 exceeds head dimension 8");
    EXPECT_EQ(testing::error_message([&] { c.run(rope, {0}, 0.0f); }),
              "cca: norm_eps must be positive and finite, got 0.000000");
    QkLatentCall no_kv;
    no_kv.k = Tensor({1, 3, 0, 8}), no_kv.key_scale = Tensor({0});
    no_kv.conv = {scaled({32, 1, 3}, 1, 0.6f), Tensor({32}), cca_grouped_by_output(scaled({32, 8, 2}, 2, 0.3f)),
                  Tensor({32})};
    no_kv.rows = Tensor({1, 6, 32});
    EXPECT_EQ(testing::error_message([&] { no_kv.run(rope, {0}); }), "cca: 4 query heads cannot share 0 KV heads");
    QkLatentCall stored_layout;  // w1 as stored, not cca_grouped_by_output's
    stored_layout.conv.w1_by_output = scaled({48, 8, 2}, 2, 0.3f);
    EXPECT_EQ(testing::error_message([&] { stored_layout.run(rope, {0}); }),
              "cca: convolution weights do not match P = 48, dh = 8 (w1_by_output is cca_grouped_by_output(w1): "
              "[k1, dh, P + 32])");
    QkLatentCall no_taps;
    no_taps.conv.w0 = Tensor({48, 1, 0});
    no_taps.rows = Tensor({1, 3, 48});  // pad (0 - 1) + (2 - 1) = 0
    EXPECT_EQ(testing::error_message([&] { no_taps.run(rope, {0}); }),
              "cca: convolution kernels must be at least 1 wide, got 0 and 2");
}

const bool cca_check_registered = testing::register_kernel_check(
    "cca_qk_latent", {[] { return qk_latent_error(6, 2, 8, 3, 2, 19, 41); }, 1e-5,
                      [] { return qk_latent_error(16, 4, 64, 4, 3, 2048, 42); }});

}  // namespace
}  // namespace hattn
