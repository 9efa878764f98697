#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hattn/error.h"
#include "hattn/safetensors.h"
#include "hattn/safetensors_writer.h"
#include "support/errors.h"
#include "support/temp_dir.h"

namespace {

using hattn::SafetensorsFile;
using hattn::Shape;
using hattn::Tensor;
using hattn::Weights;

// Each test writes its files into a fresh temporary directory.
class SafetensorsTest : public ::testing::Test {
protected:
    std::string write(const std::string &name, const std::string &bytes) const {
        const std::string path = dir_.file(name);
        std::ofstream(path, std::ios::binary) << bytes;
        return path;
    }

    hattn::testing::TempDir dir_;
};

// A safetensors file: 8-byte little-endian header length, the header, then the data section.
std::string blob(const std::string &header, const std::string &data) {
    std::string out;
    for (int i = 0; i < 8; i++) out += char((uint64_t(header.size()) >> (8 * i)) & 0xff);
    return out + header + data;
}

std::string f32_bytes(const std::vector<float> &values) {
    std::string out(values.size() * 4, '\0');
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

std::string u16_bytes(const std::vector<uint16_t> &values) {
    std::string out;
    for (uint16_t v : values) {
        out += char(v & 0xff);
        out += char(v >> 8);
    }
    return out;
}

std::string entry(const std::string &name, const std::string &dtype, const std::string &shape,
                  uint64_t begin, uint64_t end) {
    return "\"" + name + "\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape +
           ", \"data_offsets\": [" + std::to_string(begin) + ", " + std::to_string(end) + "]}";
}

using hattn::testing::error_message;
using hattn::testing::expect_contains_all;

uint32_t bits_of(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

TEST_F(SafetensorsTest, LoadsF32) {
    const std::vector<float> values = {1.5f, -2.0f, 3.25f, 1e-30f, 0.0f, 7.0f};
    const std::string path = write(
        "a.safetensors", blob("{" + entry("w", "F32", "[2, 3]", 0, 24) + "}", f32_bytes(values)));
    const SafetensorsFile file = SafetensorsFile::open(path);
    ASSERT_EQ(file.tensors().size(), 1u);
    EXPECT_EQ(file.tensors()[0].dtype, hattn::DType::F32);
    const Tensor t = file.load("w");
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.values(), values);
}

TEST_F(SafetensorsTest, WidensF16Exactly) {
    const std::vector<uint16_t> halves = {0x3C00, 0x0001, 0xC000, 0x8000, 0x03FF,
                                          0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x7E00};
    const std::string path = write(
        "h.safetensors", blob("{" + entry("h", "F16", "[10]", 0, 20) + "}", u16_bytes(halves)));
    const std::vector<float> v = SafetensorsFile::open(path).load("h").values();
    EXPECT_EQ(v[0], 1.0f);
    EXPECT_EQ(v[1], std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(v[2], -2.0f);
    EXPECT_EQ(bits_of(v[3]), 0x80000000u);      // -0 keeps its sign
    EXPECT_EQ(v[4], std::ldexp(1023.0f, -24));  // largest subnormal
    EXPECT_EQ(v[5], std::ldexp(1.0f, -14));     // smallest normal
    EXPECT_EQ(v[6], 65504.0f);
    EXPECT_EQ(v[7], INFINITY);
    EXPECT_EQ(v[8], -INFINITY);
    EXPECT_TRUE(std::isnan(v[9]));
}

TEST_F(SafetensorsTest, WidensEveryF16Exactly) {
    std::vector<uint16_t> halves(65536);
    for (size_t i = 0; i < halves.size(); i++) halves[i] = uint16_t(i);
    const std::string path =
        write("all.safetensors",
              blob("{" + entry("h", "F16", "[65536]", 0, 131072) + "}", u16_bytes(halves)));
    const std::vector<float> v = SafetensorsFile::open(path).load("h").values();
    for (uint32_t h = 0; h < 65536; h++) {
        const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
        const float sign = (h & 0x8000) ? -1.0f : 1.0f;
        if (exponent == 0x1f) {
            EXPECT_TRUE(mantissa == 0 ? std::isinf(v[h]) : std::isnan(v[h])) << h;
            continue;
        }
        // value = mantissa * 2^-24 for subnormals, (1024 + mantissa) * 2^(exponent - 25) else.
        const float expected = exponent == 0
                                   ? sign * std::ldexp(float(mantissa), -24)
                                   : sign * std::ldexp(float(1024 + mantissa), int(exponent) - 25);
        ASSERT_EQ(bits_of(v[h]), bits_of(expected)) << "half 0x" << std::hex << h;
    }
}

TEST_F(SafetensorsTest, WidensBF16Exactly) {
    const std::string path =
        write("b.safetensors", blob("{" + entry("b", "BF16", "[4]", 0, 8) + "}",
                                    u16_bytes({0x3F80, 0x4049, 0xC000, 0x0001})));
    const std::vector<float> v = SafetensorsFile::open(path).load("b").values();
    EXPECT_EQ(v[0], 1.0f);
    EXPECT_EQ(v[1], 3.140625f);
    EXPECT_EQ(v[2], -2.0f);
    EXPECT_EQ(bits_of(v[3]), 0x00010000u);
}

TEST_F(SafetensorsTest, IgnoresMetadataAndKeepsFileOrder) {
    const std::string header = "{\"__metadata__\": {\"format\": \"pt\"}, " +
                               entry("z", "F32", "[1]", 0, 4) + ", " +
                               entry("a", "F32", "[]", 4, 8) + "}";
    const std::string path = write("m.safetensors", blob(header, f32_bytes({1.0f, 2.0f})));
    const SafetensorsFile file = SafetensorsFile::open(path);
    ASSERT_EQ(file.tensors().size(), 2u);
    EXPECT_EQ(file.tensors()[0].name, "z");
    EXPECT_EQ(file.tensors()[1].name, "a");
    EXPECT_EQ(file.find("__metadata__"), nullptr);
    const Tensor scalar = file.load("a");
    EXPECT_EQ(scalar.shape(), Shape{});
    EXPECT_EQ(scalar.values(), std::vector<float>{2.0f});
    // No metadata, stated as null (the safetensors library reads it so too).
    const std::string null_metadata = write(
        "n.safetensors", blob("{\"__metadata__\": null, " + entry("z", "F32", "[1]", 0, 4) + "}", f32_bytes({1})));
    EXPECT_EQ(SafetensorsFile::open(null_metadata).tensors().size(), 1u);
}

TEST_F(SafetensorsTest, LoadsMisalignedData) {
    // Padding the header puts the data section at 1 mod 4 (the format allows any header length):
    // the F32 starts there and the F16 at an odd offset, so neither is aligned for its type.
    std::string header = "{" + entry("f", "F32", "[2]", 0, 8) + ", " + entry("h", "F16", "[1]", 8, 10) + "}";
    header.append((5 - (8 + header.size()) % 4) % 4, ' ');
    const std::string path = write("mis.safetensors", blob(header, f32_bytes({3.5f, -1.25f}) + u16_bytes({0xC000})));
    const SafetensorsFile file = SafetensorsFile::open(path);
    EXPECT_EQ(file.load("f").values(), (std::vector<float>{3.5f, -1.25f}));
    EXPECT_EQ(file.load("h").values(), std::vector<float>{-2.0f});
}

TEST_F(SafetensorsTest, WeightsPrefixLookup) {
    const std::string header = "{" + entry("model.layer.w", "F32", "[2]", 0, 8) + ", " +
                               entry("other", "F32", "[1]", 8, 12) + "}";
    const std::string path = write("p.safetensors", blob(header, f32_bytes({1, 2, 3})));
    const Weights weights = Weights::open(path, "model.layer.");
    EXPECT_TRUE(weights.has("w"));
    EXPECT_FALSE(weights.has("other"));
    EXPECT_EQ(weights.get("w").values(), (std::vector<float>{1, 2}));
    EXPECT_EQ(weights.get("w", {2}).values(), (std::vector<float>{1, 2}));
    EXPECT_EQ(weights.names(), (std::vector<std::string>{"model.layer.w", "other"}));

    expect_contains_all(error_message([&] { weights.get("missing"); }),
                    {path, "tensor 'model.layer.missing' not found"});
    expect_contains_all(error_message([&] {
                        weights.get("w", {1, 2});
                    }),
                    {path, "tensor 'model.layer.w' has shape [2], expected [1, 2]"});
}

// The file reader widens every value as stored (above); a layer's weights must be finite, as the
// kernels assume: Weights names the tensor and the element.
TEST_F(SafetensorsTest, WeightsRefuseNonFiniteValues) {
    const std::string header = "{" + entry("h", "F16", "[3]", 0, 6) + ", " + entry("b", "BF16", "[2]", 6, 10) + ", " +
                               entry("f", "F16", "[2]", 10, 14) + "}";
    const std::string path =
        write("nf.safetensors", blob(header, u16_bytes({0x3C00, 0x3C00, 0x7E00, 0xFF80, 0x3F80, 0x3C00, 0xC000})));
    const Weights weights = Weights::open(path);
    EXPECT_EQ(error_message([&] { weights.get("h"); }),
              path + ": tensor 'h': element 2 is NaN; weights must be finite");
    EXPECT_EQ(error_message([&] { weights.get("b", {2}); }),
              path + ": tensor 'b': element 0 is infinite; weights must be finite");
    EXPECT_EQ(weights.get("f").values(), (std::vector<float>{1, -2}));
    EXPECT_TRUE(std::isnan(SafetensorsFile::open(path).load("h").values()[2]));
}

// A Hugging Face layer's index is read from its prefix (Gemma 3's layers differ by it).
TEST_F(SafetensorsTest, ALayerPrefixNamesItsIndex) {
    const std::string path = write("l.safetensors", blob("{" + entry("w", "F32", "[1]", 0, 4) + "}", f32_bytes({1})));
    const auto index = [&](const std::string &prefix) { return Weights::open(path, prefix).layer_index(); };
    EXPECT_EQ(index("model.layers.3.self_attn."), 3);
    EXPECT_EQ(index("model.language_model.layers.17.self_attn."), 17);
    EXPECT_EQ(index("layers.0."), 0);
    EXPECT_EQ(index(""), std::nullopt);
    EXPECT_EQ(index("model.sublayers.3."), std::nullopt);
    EXPECT_EQ(index("model.layers.x.self_attn."), std::nullopt);
    EXPECT_EQ(index("model.layers.999999999.self_attn."), 999999999);
    expect_contains_all(
        error_message([&] { index("model.layers.99999999999999999999.self_attn."); }),
        {"'model.layers.99999999999999999999.self_attn.'", "layer index 99999999999999999999 is too large"});
}

TEST_F(SafetensorsTest, WeightsFromShardedIndex) {
    write("s1.safetensors", blob("{" + entry("m.a", "F32", "[1]", 0, 4) + "}", f32_bytes({1})));
    write("s2.safetensors", blob("{" + entry("m.b", "BF16", "[2]", 0, 4) + ", " +
                                     entry("m.c", "F32", "[1]", 4, 8) + "}",
                                 u16_bytes({0x3F80, 0x4049}) + f32_bytes({5})));
    const std::string index =
        write("model.safetensors.index.json",
              R"({"metadata": {"total_size": 12}, "weight_map": {"m.a": "s1.safetensors",
            "m.b": "s2.safetensors", "m.c": "s2.safetensors"}})");
    const Weights weights = Weights::open(index, "m.");
    EXPECT_EQ(weights.source(), index);
    EXPECT_EQ(weights.get("a").values(), std::vector<float>{1});
    EXPECT_EQ(weights.get("b", {2}).values(), (std::vector<float>{1.0f, 3.140625f}));
    EXPECT_EQ(weights.get("c").values(), std::vector<float>{5});
    EXPECT_EQ(weights.names().size(), 3u);
    expect_contains_all(error_message([&] { weights.get("d"); }), {index, "'m.d' not found"});
}

TEST_F(SafetensorsTest, ShardedIndexErrorsNameTheIndex) {
    const std::string bad_json = write("a.safetensors.index.json", "{\"weight_map\": ");
    expect_contains_all(error_message([&] { Weights::open(bad_json); }), {bad_json, "invalid JSON"});
    const std::string no_map = write("b.safetensors.index.json", "{\"metadata\": {}}");
    expect_contains_all(error_message([&] { Weights::open(no_map); }), {no_map, "weight_map"});
    const std::string missing_shard =
        write("c.safetensors.index.json", R"({"weight_map": {"x": "absent.safetensors"}})");
    expect_contains_all(error_message([&] { Weights::open(missing_shard); }),
                    {missing_shard, "absent.safetensors", "cannot open"});
    write("s.safetensors", blob("{" + entry("y", "F32", "[1]", 0, 4) + "}", f32_bytes({1})));
    const std::string wrong_shard =
        write("d.safetensors.index.json", R"({"weight_map": {"x": "s.safetensors"}})");
    expect_contains_all(error_message([&] { Weights::open(wrong_shard); }),
                    {wrong_shard, "'x'", "does not contain it"});
    // A shard outside the index's folder is refused, though the file exists and holds the tensor.
    std::filesystem::create_directories(dir_.file("nested"));
    for (const std::string &shard : {std::string("../s.safetensors"), dir_.file("s.safetensors")}) {
        const std::string outside =
            write("nested/o.safetensors.index.json", R"({"weight_map": {"y": ")" + shard + R"("}})");
        EXPECT_EQ(error_message([&] { Weights::open(outside); }),
                  outside + ": weight_map entry 'y' names shard '" + shard +
                      "', which is not a file name within the index's folder");
    }
    // Below the index's folder is where some repositories keep them.
    write("nested/s.safetensors", blob("{" + entry("y", "F32", "[1]", 0, 4) + "}", f32_bytes({1})));
    const std::string below = write("i.safetensors.index.json", R"({"weight_map": {"y": "nested/s.safetensors"}})");
    EXPECT_EQ(Weights::open(below).get("y").values(), std::vector<float>{1});
}

TEST_F(SafetensorsTest, RejectsTruncatedFiles) {
    const std::string tiny = write("tiny.safetensors", "abc");
    expect_contains_all(error_message([&] { SafetensorsFile::open(tiny); }),
                    {tiny, "3 bytes", "too short"});

    const std::string header = "{" + entry("w", "F32", "[2]", 0, 8) + "}";
    const std::string cut_header =
        write("cut_header.safetensors", blob(header, "").substr(0, 8 + header.size() / 2));
    expect_contains_all(error_message([&] { SafetensorsFile::open(cut_header); }),
                    {cut_header, "header length", "exceeds the file size"});

    const std::string cut_data = write("cut_data.safetensors", blob(header, f32_bytes({1})));
    expect_contains_all(error_message([&] { SafetensorsFile::open(cut_data); }),
                    {cut_data, "tensor 'w'", "past the end of the file"});

    const std::string absurd =
        write("absurd.safetensors", std::string("\x00\x00\x00\x10\x00\x00\x00\x00", 8) + "{}");
    expect_contains_all(error_message([&] { SafetensorsFile::open(absurd); }),
                    {absurd, "header length 268435456", "not a safetensors file"});

    const std::string missing = dir_.file("missing.safetensors");
    expect_contains_all(error_message([&] { SafetensorsFile::open(missing); }),
                    {missing, "cannot open"});
}

TEST_F(SafetensorsTest, RejectsLyingHeaders) {
    struct Case {
        std::string header;
        std::vector<std::string> expected;
    };
    const std::vector<Case> cases = {
        {"{" + entry("w", "F32", "[3]", 0, 8) + "}", {"tensor 'w'", "byte length 8", "12 bytes"}},
        {"{" + entry("w", "F32", "[1]", 0, 4) + ", " + entry("v", "F32", "[1]", 2, 6) + "}",
         {"'w' and 'v'", "overlapping"}},
        {"{" + entry("w", "F32", "[-2]", 0, 8) + "}", {"tensor 'w'", "negative dimension"}},
        {"{" + entry("w", "F32", "[2.5]", 0, 8) + "}", {"tensor 'w'", "non-integer"}},
        {"{" + entry("w", "I64", "[1]", 0, 8) + "}", {"tensor 'w'", "dtype 'I64' is not supported (F32, F16, BF16)"}},
        {"{" + entry("w", "F32", "[4611686018427387904, 4]", 0, 8) + "}", {"tensor 'w'", "overflows"}},
        {"{" + entry("w", "F32", "[1e400]", 0, 8) + "}", {"number overflow parsing '1e400'"}},
        {"{" + entry("w", "F32", "[2]", 0, 8) + "}" + std::string(1, '\0') + " ", {"a NUL byte"}},
        {R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})",
         {"tensor 'w'", "data_offsets must be two ordered non-negative integers"}},
        {R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", {"tensor 'w'", "data_offsets must be"}},
        {R"({"w": {"dtype": "F32", "shape": [2]}})", {"tensor 'w'", "missing 'data_offsets'"}},
        {R"({"w": [1, 2]})", {"tensor 'w'", "not an object"}},
        {"{\"w\": ", {"not valid JSON"}},
        {"[1, 2]", {"not a JSON object"}},
        {R"({"w": {"dtype": "F32", "shape": )" + std::string(60000, '[') + std::string(60000, ']') + "}}",
         {"JSON nested deeper than 64 levels"}},
        // A tensor named twice: nlohmann would keep one of them silently.
        {"{" + entry("w", "F32", "[1]", 0, 4) + ", " + entry("w", "F32", "[1]", 4, 8) + "}",
         {"key 'w' appears twice in one object"}},
        {"{\"__metadata__\": 5, " + entry("w", "F32", "[1]", 0, 4) + "}",
         {"__metadata__ must be an object of strings (or null), got 5"}},
        {"{\"__metadata__\": {\"a\": 5}, " + entry("w", "F32", "[1]", 0, 4) + "}",
         {"__metadata__ must be an object of strings"}},
    };
    for (size_t i = 0; i < cases.size(); i++) {
        const std::string path = write("lie" + std::to_string(i) + ".safetensors",
                                       blob(cases[i].header, std::string(16, '\0')));
        std::vector<std::string> expected = cases[i].expected;
        expected.push_back(path);
        expect_contains_all(error_message([&] { SafetensorsFile::open(path); }), expected);
    }
}

// The tensors' data tile the data section, as the safetensors library requires: bytes that belong
// to no tensor mean a file cut, padded or written by something else.
TEST_F(SafetensorsTest, RejectsDataNoTensorHolds) {
    const std::string empty = entry("e", "F32", "[0]", 3, 3);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{" + entry("w", "F32", "[1]", 4, 8) + "}", "data bytes [0, 4) belong to no tensor"},
        {"{" + entry("w", "F32", "[1]", 0, 4) + ", " + entry("v", "F32", "[1]", 8, 12) + "}",
         "data bytes [4, 8) belong to no tensor"},
        {"{" + entry("w", "F32", "[1]", 0, 4) + ", " + empty + "}", "data bytes [4, 12) belong to no tensor"},
    };
    for (size_t i = 0; i < cases.size(); i++) {
        const std::string path =
            write("gap" + std::to_string(i) + ".safetensors", blob(cases[i].first, std::string(12, '\0')));
        EXPECT_EQ(error_message([&] { SafetensorsFile::open(path); }), path + ": " + cases[i].second);
    }
    const std::string tiled = write(
        "tiled.safetensors", blob("{" + entry("w", "F32", "[3]", 0, 12) + ", " + empty + "}", f32_bytes({1, 2, 3})));
    EXPECT_EQ(SafetensorsFile::open(tiled).load("w").values(), (std::vector<float>{1, 2, 3}));
}

TEST_F(SafetensorsTest, MissingTensor) {
    const std::string path =
        write("x.safetensors", blob("{" + entry("w", "F32", "[1]", 0, 4) + "}", f32_bytes({1})));
    const SafetensorsFile file = SafetensorsFile::open(path);
    EXPECT_EQ(file.find("nope"), nullptr);
    expect_contains_all(error_message([&] { file.load("nope"); }), {path, "tensor 'nope' not found"});
}

// What the reader would refuse is refused before a byte is written; a failed write says why and
// leaves the file it would have replaced as it was.
TEST_F(SafetensorsTest, TheWriterWritesOnlyWhatTheReaderReads) {
    const std::string path = dir_.file("w.safetensors");
    hattn::write_safetensors(path, {{"a", Tensor({2}, {1, 2})}});
    const std::vector<std::pair<std::map<std::string, Tensor>, std::string>> refused = {
        {{{"__metadata__", Tensor({1})}}, "'__metadata__' cannot name a tensor (the format reserves it)"},
        {{{"a", Tensor({1})}, {"empty", Tensor()}}, "tensor 'empty' holds no values (a default-constructed Tensor)"},
        {{{"bad\xff", Tensor({1})}}, "a tensor name is not valid UTF-8"},
    };
    for (const auto &[tensors, message] : refused) {
        EXPECT_EQ(error_message([&] { hattn::write_safetensors(path, tensors); }), path + ": " + message);
    }
    hattn::write_safetensors(path, {{"", Tensor({1}, {3})}});  // an empty name is a name
    EXPECT_EQ(Weights::open(path).get("").values(), std::vector<float>{3});
    EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
    // A write too small to fail before the file is closed still fails.
    if (std::filesystem::exists("/dev/full")) {
        try {
            hattn::write_safetensors("/dev/full", {{"a", Tensor({1})}});
            ADD_FAILURE() << "writing to /dev/full succeeded";
        } catch (const hattn::Error &e) {
            expect_contains_all(e.what(), {"/dev/full", "write failed", std::strerror(ENOSPC)});
        }
    }
}

TEST_F(SafetensorsTest, FileIsMovable) {
    const std::string path =
        write("mv.safetensors", blob("{" + entry("w", "F32", "[1]", 0, 4) + "}", f32_bytes({9})));
    SafetensorsFile first = SafetensorsFile::open(path);
    SafetensorsFile second = std::move(first);
    EXPECT_EQ(second.load("w").values(), std::vector<float>{9});
    first = std::move(second);
    EXPECT_EQ(first.load("w").values(), std::vector<float>{9});
}

}  // namespace
