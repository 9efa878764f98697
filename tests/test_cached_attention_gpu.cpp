// The Hugging Face layers' checks of tests/support/cached_checks.h on each GPU API (test_cached_attention.cpp
// runs them on the CPU): the same layers against the same float64 references, their kernels on the device.
#include <gtest/gtest.h>

#include <optional>

#include "support/cached_checks.h"
#include "support/device.h"

namespace hattn {
namespace {

class CachedOnGpu : public testing::OnEachGpu {};

// Mistral's window. On a GPU the windowed prefill reads crops of the resident cache (device crops, or
// copies where OpenCL cannot crop at that offset).
TEST_P(CachedOnGpu, ASlidingWindowHidesKeysPastIt) {
    const testing::OnDevice on(GetParam());
    testing::check_sliding_window();
}

// Qwen3's and OLMo 2's RMSNorms, Gemma 3's (1 + w) norms, and Command R+'s per-head LayerNorms of q and k.
TEST_P(CachedOnGpu, QkNormMatchesTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_qk_norm("qwen3");
    testing::check_qk_norm("olmo2");
    testing::check_gemma3_layers();
    testing::check_per_head_layer_norms(false);
    testing::check_per_head_layer_norms(true);
}

// gpt-oss's sinks, on a sliding and a full layer.
TEST_P(CachedOnGpu, GptOssSinksMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_gpt_oss_layers();
}

// Gemma 2's soft-capped scores, on a sliding and a full layer.
TEST_P(CachedOnGpu, Gemma2SoftCappingMatchesTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_gemma2_layers();
}

// Llama 4's chunked layers, and its layers without RoPE that scale their queries by position.
TEST_P(CachedOnGpu, Llama4ChunksAndTemperatureMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_llama4_layers();
}

// GLM-4's RoPE over half of each head, its pairs in place.
TEST_P(CachedOnGpu, GlmPartialPairsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_glm_layer();
}

// GLM-4.5's RoPE over half of each head as halves, with QK-norm.
TEST_P(CachedOnGpu, Glm45HalvesAndNormsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_glm4_moe_layer();
}

// Layers that are not causal, whole and within a window each way (past 256 queries: several calls).
TEST_P(CachedOnGpu, BidirectionalLayersMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_bidirectional(std::nullopt, 9);
    testing::check_bidirectional(40, 264);
}

// Ministral 3's query scaling, its positions counted from 0.
TEST_P(CachedOnGpu, QueriesScaledFromPositionZeroMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_queries_scaled_from_position_0();
}

// Falcon's three layouts of query_key_value.
TEST_P(CachedOnGpu, FalconFusedGroupsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_falcon_layers();
}

// GPT-NeoX's query_key_value per head, a quarter of each head rotated.
TEST_P(CachedOnGpu, GptNeoXFusedHeadsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_gpt_neox_layer();
}

// Hunyuan's QK-norm after RoPE, and its alpha RoPE within and past max_position_embeddings.
TEST_P(CachedOnGpu, HunyuanNormsAfterRopeMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_hunyuan_layer();
}

// OLMo 1's clip_qkv, q, k and v clamped as projected.
TEST_P(CachedOnGpu, OlmoClampsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    testing::check_olmo_clip();
}
HATTN_INSTANTIATE_ON_EACH_GPU(CachedOnGpu);

}  // namespace
}  // namespace hattn
