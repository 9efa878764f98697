#include "hf_rope.h"

#include <cmath>

#include "hattn/error.h"

namespace hattn::detail {

namespace {

// YaRN from `p`, a rope_scaling or rope_parameters object of the config `c`, as the paper's code
// and vLLM read it: `factor` as given. (Some transformers releases replaced it by
// max_position_embeddings / original_max_position_embeddings whenever the latter was set,
// transformers issue #38224; Qwen3's yarn config means factor 4, not 40960 / 32768.)
RopeScaling yarn(const ConfigReader &c, const ConfigReader &p, double factor) {
    RopeScaling s;
    s.type = RopeScaling::Type::Yarn;
    s.factor = factor;
    s.original_context = p.has("original_max_position_embeddings")
                             ? p.get_number("original_max_position_embeddings")
                             : c.get_number("max_position_embeddings");
    // A null or 0 beta takes the paper's value (transformers reads them with `or`).
    s.beta_fast = p.get_number("beta_fast", 0.0) != 0.0 ? p.get_number("beta_fast") : 32.0;
    s.beta_slow = p.get_number("beta_slow", 0.0) != 0.0 ? p.get_number("beta_slow") : 1.0;
    s.truncate = p.get_bool("truncate", true);
    require(s.original_context > 0 && s.beta_fast > 0 && s.beta_slow > 0,
            p.source() + ": yarn scaling needs a positive original_max_position_embeddings (or max_position_embeddings), "
                         "beta_fast and beta_slow");
    // The paper's 0.1 ln(s) + 1, or DeepSeek's ratio of two such terms with mscale and mscale_all_dim.
    const auto magnitude = [&](double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
    const double mscale = p.get_number("mscale", 0.0), mscale_all_dim = p.get_number("mscale_all_dim", 0.0);
    s.attention_factor = p.has("attention_factor")    ? p.get_number("attention_factor")
                         : mscale && mscale_all_dim ? magnitude(mscale) / magnitude(mscale_all_dim)
                                                      : magnitude(1.0);
    require(s.attention_factor > 0, p.source() + ": attention_factor must be positive");
    return s;
}

}  // namespace

HfRope hf_rope(const ConfigReader &c, const HfRopeDefaults &defaults) {
    HfRope rope{c.get_number("rope_theta", defaults.theta),
                c.get_number("partial_rotary_factor", defaults.partial_rotary_factor),
                {}};
    const char *supported = defaults.scaling_allowed ? "(default, linear, llama3 and yarn)" : "(default only)";
    for (const char *key : {"rope_parameters", "rope_scaling"}) {
        if (!c.has(key)) continue;
        ConfigReader p = c.object(key);
        if (!defaults.layer_type.empty() && p.has(defaults.layer_type)) p = p.object(defaults.layer_type);
        rope.theta = p.get_number("rope_theta", rope.theta);
        rope.partial_rotary_factor = p.get_number("partial_rotary_factor", rope.partial_rotary_factor);
        const std::string type = p.get_string("rope_type", p.get_string("type", "default"));
        if (type == "default") continue;
        require(defaults.scaling_allowed && (type == "linear" || type == "llama3" || type == "yarn"),
                p.source() + ": rope_type '" + type + "' is not supported " + supported);
        rope.scaling.type = type == "linear"   ? RopeScaling::Type::Linear
                            : type == "llama3" ? RopeScaling::Type::Llama3
                                               : RopeScaling::Type::Yarn;
        rope.scaling.factor = p.get_number("factor");
        require(rope.scaling.factor > 0, p.source() + ": factor must be positive");
        if (rope.scaling.type == RopeScaling::Type::Yarn) rope.scaling = yarn(c, p, rope.scaling.factor);
        if (rope.scaling.type == RopeScaling::Type::Llama3) {
            rope.scaling.low_freq_factor = p.get_number("low_freq_factor");
            rope.scaling.high_freq_factor = p.get_number("high_freq_factor");
            rope.scaling.original_context = p.get_number("original_max_position_embeddings");
            require(rope.scaling.low_freq_factor > 0 && rope.scaling.high_freq_factor > rope.scaling.low_freq_factor &&
                        rope.scaling.original_context > 0,
                    p.source() + ": llama3 scaling needs 0 < low_freq_factor < high_freq_factor and a positive "
                                 "original_max_position_embeddings");
        }
    }
    require(rope.theta > 0, c.source() + ": rope_theta must be positive");
    return rope;
}

}  // namespace hattn::detail
