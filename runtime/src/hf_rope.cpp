#include "hf_rope.h"

#include <cmath>
#include <optional>

#include "hattn/error.h"
#include "quoted.h"

namespace hattn::detail {

namespace {

// YaRN from `p`, a rope_scaling or rope_parameters object of the config `c`, as transformers
// (4.56 on, and 5) and vLLM read it: `factor` as stated, or where null (transformers 5)
// max_position_embeddings / original. (Transformers 4.50-4.55 replaced a stated factor by that
// ratio whenever original_max_position_embeddings was set, transformers issue #38224; Qwen3's yarn
// config means factor 4, not 40960 / 32768.) The original context: the object's
// original_max_position_embeddings, else the config's own (transformers 5), else
// max_position_embeddings.
RopeScaling yarn(const ConfigReader &c, const ConfigReader &p) {
    RopeScaling s;
    s.type = RopeScaling::Type::Yarn;
    // vLLM multiplies its own attn_factor into the attention factor; transformers ignores it
    // (DeepSeek-R1-0528-Qwen3-8B states 0.878, which cancels the 1.139 of factor 4 in vLLM only).
    require(p.get_number("attn_factor", 1.0) == 1.0,
            p.source() + ": attn_factor is read by vLLM and ignored by transformers; refused rather than guessed (state "
                         "attention_factor instead)");
    s.original_context = p.has("original_max_position_embeddings") ? p.get_number("original_max_position_embeddings")
                         : c.has("original_max_position_embeddings") ? c.get_number("original_max_position_embeddings")
                                                                      : c.get_number("max_position_embeddings");
    s.factor = p.has("factor") ? p.get_number("factor") : c.get_number("max_position_embeddings") / s.original_context;
    // A null or 0 beta takes the paper's value (transformers reads them with `or`).
    s.beta_fast = p.get_number("beta_fast", 0.0) != 0.0 ? p.get_number("beta_fast") : 32.0;
    s.beta_slow = p.get_number("beta_slow", 0.0) != 0.0 ? p.get_number("beta_slow") : 1.0;
    s.truncate = p.get_bool("truncate", true);
    require(s.factor > 0 && s.original_context > 0 && s.beta_fast > 0 && s.beta_slow > 0,
            p.source() + ": yarn scaling needs a positive factor, original_max_position_embeddings (or "
                         "max_position_embeddings), beta_fast and beta_slow");
    // The paper's 0.1 ln(s) + 1, or DeepSeek's ratio of two such terms with mscale and mscale_all_dim.
    const auto magnitude = [&](double m) { return s.factor <= 1.0 ? 1.0 : 0.1 * m * std::log(s.factor) + 1.0; };
    const double mscale = p.get_number("mscale", 0.0), mscale_all_dim = p.get_number("mscale_all_dim", 0.0);
    s.attention_factor = p.has("attention_factor")    ? p.get_number("attention_factor")
                         : mscale && mscale_all_dim ? magnitude(mscale) / magnitude(mscale_all_dim)
                                                      : magnitude(1.0);
    require(s.attention_factor > 0, p.source() + ": attention_factor must be positive");
    return s;
}

// LongRope from `p` (rope_scaling or rope_parameters) of the config `c`, as transformers reads it:
// short_factor and long_factor, one per pair; the original context the config's own
// original_max_position_embeddings (else the class's `class_original`, else
// max_position_embeddings), which transformers 4 reads and 5 copies into `p` (where `p` states
// another, the two differ: refused); attention_factor as stated, else sqrt(1 + ln(factor) /
// ln(original)) (1 where factor <= 1), factor being max_position_embeddings / original.
// Transformers 5 takes a stated `factor` there instead, 4 that ratio whenever the config states its
// own original context: where both are stated and differ, refused.
RopeScaling longrope(const ConfigReader &c, const ConfigReader &p, std::optional<double> class_original) {
    RopeScaling s;
    s.type = RopeScaling::Type::LongRope;
    s.short_factors = p.get_number_list("short_factor");
    s.long_factors = p.get_number_list("long_factor");
    const char *original = "original_max_position_embeddings";
    const std::optional<double> own = c.has(original) ? std::optional<double>(c.get_number(original)) : class_original;
    require(!p.has(original) || (own && *own == p.get_number(original)),
            p.source() + ": " + original + " " + std::to_string(p.get_number(original, 0)) +
                " differs from the config's own (" + (own ? std::to_string(*own) : std::string("none")) +
                "), which transformers 4 reads; keep one");
    s.original_context = own ? *own : c.get_number("max_position_embeddings");
    require(s.original_context > 1, p.source() + ": longrope needs an original_max_position_embeddings above 1");
    const double ratio = c.get_number("max_position_embeddings", s.original_context) / s.original_context;
    s.factor = p.has("factor") ? p.get_number("factor") : ratio;
    require(!p.has("factor") || !c.has(original) || s.factor == ratio || p.has("attention_factor"),
            p.source() + ": factor " + std::to_string(s.factor) + " differs from max_position_embeddings / " + original +
                " (" + std::to_string(ratio) + "), which transformers 4 reads in its place; state attention_factor");
    require(s.factor > 0, p.source() + ": factor must be positive");
    s.attention_factor = p.has("attention_factor") ? p.get_number("attention_factor")
                         : s.factor <= 1.0        ? 1.0
                                                  : std::sqrt(1.0 + std::log(s.factor) / std::log(s.original_context));
    require(s.attention_factor > 0, p.source() + ": attention_factor must be positive");
    require(s.short_factors.size() == s.long_factors.size(),
            p.source() + ": short_factor and long_factor must have one value per pair each, got " +
                std::to_string(s.short_factors.size()) + " and " + std::to_string(s.long_factors.size()));
    return s;
}

// Dynamic NTK (transformers' "dynamic"): a call whose positions pass max_position_embeddings L0
// turns by a larger base, base * (factor * L / L0 - (factor - 1))^(dim / (dim - 2)) for the call's
// length L (its last position + 1). Hunyuan's (reads_alpha) turns by base * alpha^(dim / (dim - 2))
// within L0. transformers reads the config's max_position_embeddings, not
// the scaling's original_max_position_embeddings: where that is stated and differs, refused.
RopeScaling dynamic_ntk(const ConfigReader &c, const ConfigReader &p, bool reads_alpha) {
    RopeScaling s;
    s.type = RopeScaling::Type::Dynamic;
    s.factor = p.get_number("factor");
    if (reads_alpha) {
        s.alpha = p.get_number("alpha", 1.0);
        require(s.alpha > 0 && std::isfinite(s.alpha), p.source() + ": alpha must be positive, got " + std::to_string(s.alpha));
    }
    s.original_context = c.get_number("max_position_embeddings");
    require(s.factor >= 1 && s.original_context > 0,
            p.source() + ": dynamic scaling needs a factor of at least 1 and a positive max_position_embeddings");
    const char *original = "original_max_position_embeddings";
    require(!p.has(original) || p.get_number(original) == s.original_context,
            p.source() + ": " + original + " " + std::to_string(p.get_number(original, 0)) +
                " differs from max_position_embeddings, from which transformers' dynamic scaling grows");
    return s;
}

}  // namespace

std::optional<ConfigReader> rope_object(const ConfigReader &c, const std::string &layer_type) {
    const char *key = c.has("rope_parameters") ? "rope_parameters" : c.has("rope_scaling") ? "rope_scaling" : nullptr;
    if (!key) return std::nullopt;
    ConfigReader p = c.object(key);
    return !layer_type.empty() && p.has(layer_type) ? p.object(layer_type) : p;
}

HfRope hf_rope(const ConfigReader &c, const HfRopeDefaults &defaults) {
    HfRope rope{c.get_number("rope_theta", defaults.theta),
                c.get_number("partial_rotary_factor", defaults.partial_rotary_factor),
                {}};
    const auto type_of = [](const ConfigReader &p) { return p.get_string("rope_type", p.get_string("type", "default")); };
    // transformers 5 reads rope_parameters, 4 rope_scaling: where both are given and the second
    // scales, the two would rotate differently.
    const std::optional<ConfigReader> p = rope_object(c, defaults.layer_type);
    if (c.has("rope_parameters") && c.has("rope_scaling")) {
        ConfigReader scaling = c.object("rope_scaling");
        if (!defaults.layer_type.empty() && scaling.has(defaults.layer_type)) scaling = scaling.object(defaults.layer_type);
        require(type_of(scaling) == "default",
                c.source() + ": both rope_parameters and a scaling rope_scaling are given (transformers 5 reads the "
                             "first, 4 the second); keep one");
    }
    const std::string type = p ? type_of(*p) : "default";
    if (p) {
        rope.theta = p->get_number("rope_theta", rope.theta);
        rope.partial_rotary_factor = p->get_number("partial_rotary_factor", rope.partial_rotary_factor);
    }
    const char *supported = !defaults.scaling_allowed   ? "(default only)"
                            : defaults.per_call_allowed ? "(default, linear, llama3, yarn, longrope and dynamic)"
                                                        : "(default, linear, llama3 and yarn)";
    if (type == "yarn" && defaults.scaling_allowed) {
        rope.scaling = yarn(c, *p);
    } else if (type == "longrope" && defaults.scaling_allowed && defaults.per_call_allowed) {
        rope.scaling = longrope(c, *p, defaults.original_context);
    } else if (type == "dynamic" && defaults.scaling_allowed && defaults.per_call_allowed) {
        rope.scaling = dynamic_ntk(c, *p, defaults.reads_alpha);
    } else if (type != "default") {
        require(defaults.scaling_allowed && (type == "linear" || type == "llama3"),
                p->source() + ": rope_type " + detail::quoted(type) + " is not supported " + supported);
        rope.scaling.type = type == "linear" ? RopeScaling::Type::Linear : RopeScaling::Type::Llama3;
        rope.scaling.factor = p->get_number("factor");
        require(rope.scaling.factor > 0, p->source() + ": factor must be positive");
        if (rope.scaling.type == RopeScaling::Type::Llama3) {
            rope.scaling.low_freq_factor = p->get_number("low_freq_factor");
            rope.scaling.high_freq_factor = p->get_number("high_freq_factor");
            rope.scaling.original_context = p->get_number("original_max_position_embeddings");
            require(rope.scaling.low_freq_factor > 0 && rope.scaling.high_freq_factor > rope.scaling.low_freq_factor &&
                        rope.scaling.original_context > 0,
                    p->source() + ": llama3 scaling needs 0 < low_freq_factor < high_freq_factor and a positive "
                                  "original_max_position_embeddings");
        }
    }
    require(rope.theta > 0, c.source() + ": rope_theta must be positive");
    return rope;
}

}  // namespace hattn::detail
