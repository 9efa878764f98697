#include "hf_rope.h"

#include <string>

#include "hattn/error.h"

namespace hattn::detail {

HfRope hf_rope(const ConfigReader &c, double fallback) {
    HfRope rope{c.get_number("rope_theta", fallback), {}};
    for (const char *key : {"rope_parameters", "rope_scaling"}) {
        if (!c.has(key)) continue;
        const ConfigReader p = c.object(key);
        rope.theta = p.get_number("rope_theta", rope.theta);
        const std::string type = p.get_string("rope_type", p.get_string("type", "default"));
        if (type == "default") continue;
        require(type == "linear" || type == "llama3", c.source() + ": " + key + " rope_type '" + type +
                                                          "' is not supported (default, linear and llama3)");
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
