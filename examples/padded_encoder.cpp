// An embedding encoder's use of hattn: one layer of an EmbeddingGemma-style checkpoint (Gemma 3's
// attention with use_bidirectional_attention: every query sees the keys after it too, a sliding
// layer those within its window each way) read from its config.json keys, run on a batch whose
// shorter sequence is padded and masked. Each sequence's outputs equal those of the sequence run
// alone. Exits 0 when they do; any hattn::Error is one line on stderr.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "example_layer.h"

namespace {

using example::E;

int run() {
    const int64_t B = 2, S = 10, lengths[B] = {10, 7};
    std::mt19937 rng(11);
    // Layer 0 slides: transformers keeps sliding_window // 2 + 1 = 4 keys each way.
    const hattn::ConfigReader config = hattn::ConfigReader::parse(R"({
        "model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 1,
        "head_dim": 16, "query_pre_attn_scalar": 16, "num_hidden_layers": 6, "sliding_window": 6,
        "use_bidirectional_attention": true})",
                                                                  "config.json");
    const float a = 1.0f / std::sqrt(float(E));
    const std::string p = "model.layers.0.self_attn.";
    const hattn::CachedAttention layer = example::layer_from_file(
        config,
        {{p + "q_proj.weight", example::random_tensor({64, E}, rng, a)},
         {p + "k_proj.weight", example::random_tensor({16, E}, rng, a)},
         {p + "v_proj.weight", example::random_tensor({16, E}, rng, a)},
         {p + "o_proj.weight", example::random_tensor({E, 64}, rng, a)},
         {p + "q_norm.weight", example::random_tensor({16}, rng, 0.1f)},  // Gemma's norms scale by 1 + w
         {p + "k_norm.weight", example::random_tensor({16}, rng, 0.1f)}},
        p);
    std::printf("layer 0: window %lld each way, causal %s\n", (long long)layer.config().sliding_window.value_or(0),
                layer.config().causal ? "yes" : "no");

    // The batch: sequence 1's last 3 tokens are padding, hidden from every query by the mask.
    const hattn::Tensor x = example::random_tensor({B, S, E}, rng, 1.0f);
    std::vector<uint8_t> hidden(B * S * S, 0);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < S; i++)
            for (int64_t j = lengths[b]; j < S; j++) hidden[(b * S + i) * S + j] = 1;
    const hattn::MaskView mask{hidden.data(), {B, 1, S, S}};
    const hattn::Tensor padded = layer.self_attention(x, nullptr, &mask);

    double worst = 0;
    for (int64_t b = 0; b < B; b++) {
        hattn::Tensor alone({1, lengths[b], E}), padded_rows({1, lengths[b], E});
        std::copy_n(x.data() + b * S * E, lengths[b] * E, alone.data());
        std::copy_n(padded.data() + b * S * E, lengths[b] * E, padded_rows.data());
        worst = std::max(worst, example::relative_l2(padded_rows, layer.self_attention(alone)));
    }
    std::printf("padded batch vs each sequence alone: relative L2 %.2e\n", worst);
    return worst <= 1e-5 ? 0 : 1;
}

}  // namespace

int main() { return example::main_reporting_errors("padded_encoder", run); }
