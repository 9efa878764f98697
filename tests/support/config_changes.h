// Checking that a layer config's validate() and the layer's constructor refuse a config built by
// hand, change by change, with the same message.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "support/errors.h"

namespace hattn::testing {

// A change to a valid config, and the message (after the layer's prefix) that refuses it.
template <class Config>
using ConfigChange = std::pair<std::function<void(Config &)>, std::string>;

// For each change to `valid`: validate() and `build(config)` (which constructs the layer) both
// throw "<prefix>: <message>".
template <class Config, class Build>
void expect_each_change_refused(const Config &valid, const std::vector<ConfigChange<Config>> &changes,
                                const std::string &prefix, Build build) {
    EXPECT_NO_THROW(valid.validate());
    for (const auto &[change, message] : changes) {
        Config config = valid;
        change(config);
        EXPECT_EQ(error_message([&] { config.validate(); }), prefix + ": " + message);
        EXPECT_EQ(error_message([&] { build(config); }), prefix + ": " + message);
    }
}

}  // namespace hattn::testing
