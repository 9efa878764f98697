// GLM-5 sparse attention (hattn::DsaAttention): configuration, top-k bookkeeping, shared indices,
// and decode (absorbed, in the latent) against the whole-sequence forward (expanded). The golden
// cases compare the layer with an independent float64 implementation.
#include <gtest/gtest.h>

#include <map>

#include "hattn/error.h"
#include "hattn/layers/dsa_attention.h"
#include "hattn/safetensors_writer.h"
#include "support/compare.h"
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

DsaAttention make_layer(const nlohmann::json &json, const std::string &prefix = "") {
    const DsaConfig c = DsaConfig::from(ConfigReader(json, "config.json"));
    const int64_t E = c.hidden, H = c.heads;
    auto t = [](Shape s, uint32_t seed) {
        Tensor x = testing::random_tensor(s, seed);
        for (float &v : x.values()) v *= 0.3f;
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
    std::map<std::string, Tensor> named;
    for (auto &[name, tensor] : w) named[prefix + name] = tensor;
    testing::TempDir dir;
    write_safetensors(dir.file("w.safetensors"), named);
    return DsaAttention(c, Weights::open(dir.file("w.safetensors"), prefix));
}

TEST(DsaAttention, DecodeInTheLatentEqualsTheExpandedForward) {
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

TEST(DsaAttention, SharedIndicesAreUsedAndBoundsChecked) {
    DsaAttention layer = make_layer(small_config(2));
    const Tensor x = testing::random_tensor({1, 4, 64}, 22);
    TopK sel;
    const Tensor y = layer.forward(x, &sel);
    EXPECT_EQ(layer.forward(x, nullptr, &sel).values(), y.values());  // a shared layer reusing them
    TopK bad = sel;
    bad.indices[2 * bad.k] = 3;  // query 2 cannot see key 3
    try {
        layer.forward(x, nullptr, &bad);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("outside its visible keys"), std::string::npos) << e.what();
    }
}

TEST(DsaAttention, FullCacheThrowsAndKeepsTheState) {
    DsaAttention layer = make_layer(small_config(4));
    DsaState state = layer.make_state(1, 3);
    layer.prefill(testing::random_tensor({1, 2, 64}, 23), state);
    EXPECT_THROW(layer.prefill(testing::random_tensor({1, 2, 64}, 24), state), Error);
    EXPECT_EQ(state.lengths, std::vector<int32_t>({2}));
}

TEST(DsaConfig, RejectsWhatIsOutOfScope) {
    nlohmann::json yarn = small_config(4);
    yarn["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4}};
    EXPECT_THROW(DsaConfig::from(ConfigReader(yarn, "config.json")), Error);
    nlohmann::json odd = small_config(4);
    odd["qk_rope_head_dim"] = 7;
    EXPECT_THROW(DsaConfig::from(ConfigReader(odd, "config.json")), Error);
}

}  // namespace
}  // namespace hattn
