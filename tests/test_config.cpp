#include <gtest/gtest.h>

#include "support/errors.h"

#include <fstream>
#include <functional>
#include <string>

#include "hattn/config.h"
#include "hattn/error.h"
#include "support/temp_dir.h"

namespace {

using hattn::ConfigReader;

using hattn::testing::error_message;
using hattn::testing::expect_contains;

ConfigReader reader() {
    return ConfigReader::parse(R"({
        "num_heads": 8, "head_dim": 64.0, "bad_int": "abc", "fractional": 8.5,
        "huge": 18446744073709551615, "int32_max": 2147483647, "past_int32": 2147483648,
        "below_int32": -2147483649, "float_past_int32": 1e300, "negative": -3, "theta": 10000.0, "eps": 1e-5,
        "causal": true, "name": "llama", "unset": null, "list": [1, 2, 3]
        , "rope": {"theta": 5.0, "inner": {"theta": "x"}}
    })",
                               "config.json");
}

TEST(ConfigTest, Integers) {
    const ConfigReader config = reader();
    EXPECT_EQ(config.get_int("num_heads"), 8);
    EXPECT_EQ(config.get_int("head_dim"), 64);  // 64.0 is an exact integer
    EXPECT_EQ(config.get_int("negative"), -3);
    EXPECT_EQ(config.get_int("absent", 5), 5);
    EXPECT_EQ(config.get_int("unset", 5), 5);
    EXPECT_EQ(config.get_int("num_heads", 5), 8);
    EXPECT_EQ(config.get_optional_int("num_heads"), 8);
    EXPECT_EQ(config.get_optional_int("absent"), std::nullopt);
    EXPECT_EQ(config.get_optional_int("unset"), std::nullopt);

    EXPECT_EQ(error_message([&] { config.get_int("bad_int"); }),
              "config.json: key 'bad_int' must be an integer, got \"abc\"");
    EXPECT_EQ(error_message([&] { config.get_int("fractional", 1); }),
              "config.json: key 'fractional' must be an integer, got 8.5");
    EXPECT_EQ(error_message([&] { config.get_optional_int("list"); }),
              "config.json: key 'list' must be an integer, got [1,2,3]");
    EXPECT_EQ(config.get_int("int32_max"), 2147483647);
    for (const char *key : {"huge", "past_int32", "below_int32", "float_past_int32"}) {
        expect_contains(error_message([&] { config.get_int(key); }), "must be an integer in the int32 range");
    }
    EXPECT_EQ(error_message([&] { config.get_int("absent"); }),
              "config.json: missing key 'absent'");
    EXPECT_EQ(error_message([&] { config.get_int("unset"); }), "config.json: missing key 'unset'");
}

TEST(ConfigTest, NumbersBoolsStrings) {
    const ConfigReader config = reader();
    EXPECT_EQ(config.get_number("theta"), 10000.0);
    EXPECT_EQ(config.get_number("num_heads"), 8.0);
    EXPECT_EQ(config.get_number("eps"), 1e-5);
    EXPECT_EQ(config.get_number("absent", 0.5), 0.5);
    EXPECT_EQ(config.get_optional_number("eps"), 1e-5);
    EXPECT_EQ(config.get_optional_number("unset"), std::nullopt);
    EXPECT_EQ(error_message([&] { config.get_number("causal"); }),
              "config.json: key 'causal' must be a number, got true");

    EXPECT_TRUE(config.get_bool("causal"));
    EXPECT_FALSE(config.get_bool("absent", false));
    EXPECT_EQ(error_message([&] { config.get_bool("num_heads"); }),
              "config.json: key 'num_heads' must be true or false, got 8");

    EXPECT_EQ(config.get_string("name"), "llama");
    EXPECT_EQ(config.get_string("absent", "x"), "x");
    EXPECT_EQ(error_message([&] { config.get_string("num_heads", "x"); }),
              "config.json: key 'num_heads' must be a string, got 8");

    EXPECT_TRUE(config.has("name"));
    EXPECT_FALSE(config.has("unset"));
    EXPECT_FALSE(config.has("absent"));
    EXPECT_EQ(config.get_optional_int_list("list"), (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(config.get_optional_int_list("unset"), std::nullopt);
    EXPECT_EQ(config.get_number_list("list"), (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(error_message([&] { config.get_number_list("absent"); }), "config.json: missing key 'absent'");
    EXPECT_EQ(error_message([&] { config.get_optional_int_list("name"); }),
              "config.json: key 'name' must be a list of integers, got \"llama\"");
    // A null is told apart from a missing key where a config class reads it as "off".
    EXPECT_TRUE(config.states_null("unset"));
    EXPECT_FALSE(config.states_null("absent"));
    EXPECT_FALSE(config.states_null("name"));
    EXPECT_EQ(config.source(), "config.json");
}

TEST(ConfigTest, RejectsNonObject) {
    EXPECT_EQ(error_message([] { ConfigReader::parse("[1]", "x.json"); }),
              "x.json: top level must be a JSON object, got array");
}

TEST(ConfigTest, NestedObjectsNameTheirPath) {
    const ConfigReader config = reader();
    const ConfigReader rope = config.object("rope");
    EXPECT_EQ(rope.get_number("theta"), 5.0);
    EXPECT_EQ(rope.source(), "config.json (rope)");
    EXPECT_EQ(error_message([&] { rope.object("inner").get_number("theta"); }),
              "config.json (rope.inner): key 'theta' must be a number, got \"x\"");
    EXPECT_EQ(error_message([&] { config.object("name"); }), "config.json: key 'name' must be an object, got \"llama\"");
    EXPECT_EQ(error_message([&] { config.object("unset"); }), "config.json: missing key 'unset'");
}

TEST(ConfigTest, FromFile) {
    const hattn::testing::TempDir dir;
    const auto write = [&](const std::string &name, const std::string &text) {
        std::ofstream(dir.file(name)) << text;
        return dir.file(name);
    };

    const std::string good = write("good.json", R"({"a": 1})");
    EXPECT_EQ(ConfigReader::from_file(good).get_int("a"), 1);

    const std::string missing = dir.file("missing.json");
    EXPECT_EQ(error_message([&] { ConfigReader::from_file(missing); }), missing + ": cannot open: file not found");

    const std::string broken = write("broken.json", "{\"a\": 1,\n \"b\": }");
    const std::string message = error_message([&] { ConfigReader::from_file(broken); });
    expect_contains(message, broken + ": invalid JSON at byte 16: ");
    expect_contains(message, "line 2");
    EXPECT_EQ(message.find('\n'), std::string::npos);

    // A NUL byte would end nlohmann's input there, and what follows would go unread.
    const std::string nul = write("nul.json", std::string("{\"a\": 1}\0{\"garbage", 19));
    EXPECT_EQ(error_message([&] { ConfigReader::from_file(nul); }), nul + ": invalid JSON at byte 8: a NUL byte");

    const std::string array = write("array.json", "[1, 2]");
    EXPECT_EQ(error_message([&] { ConfigReader::from_file(array); }),
              array + ": top level must be a JSON object, got array");

    expect_contains(error_message([&] { ConfigReader::from_file(dir.path().string()); }),
                    "is a directory");

    // Nesting that would overflow the stack of a reader's copy or an error message's dump().
    const std::string deep = write("deep.json", "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
    EXPECT_EQ(error_message([&] { ConfigReader::from_file(deep); }), deep + ": JSON nested deeper than 64 levels");
    const std::string huge = write("huge.json", "{\"rope_base\": 1e400}");
    EXPECT_EQ(error_message([&] { ConfigReader::from_file(huge); }), huge + ": number overflow parsing '1e400'");
    const std::string nested = write("nested.json", "{\"a\": " + std::string(63, '[') + std::string(63, ']') + "}");
    EXPECT_TRUE(ConfigReader::from_file(nested).has("a"));

    // A key given twice in one object is refused; the same key in two objects is not.
    const std::string twice = write("twice.json", R"({"rope_scaling": {"factor": 2, "factor": 8}})");
    EXPECT_EQ(error_message([&] { ConfigReader::from_file(twice); }),
              twice + ": key 'factor' appears twice in one object");
    const std::string apart = write("apart.json", R"({"a": {"factor": 2}, "b": {"factor": 8}})");
    EXPECT_TRUE(ConfigReader::from_file(apart).has("b"));
}

}  // namespace
