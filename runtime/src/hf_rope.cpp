#include "hf_rope.h"

#include "hattn/error.h"

namespace hattn::detail {

HfRope hf_rope(const ConfigReader &c, const HfRopeDefaults &defaults) {
    HfRope rope{c.get_number("rope_theta", defaults.theta),
                c.get_number("partial_rotary_factor", defaults.partial_rotary_factor),
                {}};
    const char *supported = defaults.scaling_allowed ? "(default, linear and llama3)" : "(default only)";
    for (const char *key : {"rope_parameters", "rope_scaling"}) {
        if (!c.has(key)) continue;
        ConfigReader p = c.object(key);
        if (!defaults.layer_type.empty() && p.has(defaults.layer_type)) p = p.object(defaults.layer_type);
        rope.theta = p.get_number("rope_theta", rope.theta);
        rope.partial_rotary_factor = p.get_number("partial_rotary_factor", rope.partial_rotary_factor);
        const std::string type = p.get_string("rope_type", p.get_string("type", "default"));
        if (type == "default") continue;
        require(defaults.scaling_allowed && (type == "linear" || type == "llama3"),
                p.source() + ": rope_type '" + type + "' is not supported " + supported);
        rope.scaling.type = type == "linear" ? RopeScaling::Type::Linear : RopeScaling::Type::Llama3;
        rope.scaling.factor = p.get_number("factor");
        require(rope.scaling.factor > 0, p.source() + ": factor must be positive");
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
