#include "hf_rope.h"

#include <string>

#include "hattn/error.h"

namespace hattn::detail {

double hf_rope_theta(const ConfigReader &c, double fallback) {
    double theta = c.get_number("rope_theta", fallback);
    for (const char *key : {"rope_parameters", "rope_scaling"}) {
        if (!c.has(key)) continue;
        const ConfigReader rope = c.object(key);
        const std::string type = rope.get_string("rope_type", rope.get_string("type", "default"));
        require(type == "default", c.source() + ": " + key + " rope_type '" + type + "' is not supported (default only)");
        theta = rope.get_number("rope_theta", theta);
    }
    require(theta > 0, c.source() + ": rope_theta must be positive");
    return theta;
}

}  // namespace hattn::detail
