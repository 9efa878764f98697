// Configs written in tests as JSON literals, read through the public parser.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "hattn/config.h"

namespace hattn::testing {

inline ConfigReader config_of(const nlohmann::json &json, const std::string &source = "config.json") {
    return ConfigReader::parse(json.dump(), source);
}

}  // namespace hattn::testing
