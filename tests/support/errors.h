// Asserting on hattn::Error messages.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "hattn/error.h"

namespace hattn::testing {

// Runs `action`, which must throw an invalid-input hattn::Error of one line; returns its message.
inline std::string error_message(const std::function<void()> &action) {
    try {
        action();
    } catch (const hattn::Error &e) {
        EXPECT_TRUE(e.is_invalid_input());
        const std::string message = e.what();
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        return message;
    }
    ADD_FAILURE() << "expected hattn::Error";
    return "";
}

inline void expect_contains(const std::string &text, const std::string &part) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

inline void expect_contains_all(const std::string &text, const std::vector<std::string> &parts) {
    for (const std::string &part : parts) expect_contains(text, part);
}

}  // namespace hattn::testing
