// Asserting on hattn::Error messages.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "hattn/error.h"

namespace hattn::testing {

// Runs `action`, which must throw an invalid-input hattn::Error; returns its message.
inline std::string error_message(const std::function<void()> &action) {
    try {
        action();
    } catch (const hattn::Error &e) {
        EXPECT_TRUE(e.is_invalid_input());
        return e.what();
    }
    ADD_FAILURE() << "expected hattn::Error";
    return "";
}

inline void expect_contains(const std::string &text, const std::string &part) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

}  // namespace hattn::testing
