// The fuzz campaign's findings as the CLI meets them (docs/reliability.md): every bad input ends
// at once in one line on stderr, exit 2.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <string>

#include "support/cli.h"

namespace hattn {
namespace {

using testing::Cli;
using testing::CliResult;

// A config of two billion layers was described layer by layer (hours), and -5 was accepted.
TEST_F(Cli, InspectDescribesTwoBillionLayersByTheirRule) {
    const std::string gemma3 = tmp.file("config.json");
    std::ofstream(gemma3) << R"({"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 4,
        "num_hidden_layers": 2147483647, "sliding_window": 512})";
    const CliResult r = hattn("inspect " + gemma3);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, gemma3 + ": cached_attention, 2147483647 layers\n"
                     "  layers i with (i + 1) % 6 != 0: E=64 H=4 Hkv=4 D=256; RoPE theta 10000; QK-norm per head by 1 + "
                     "w eps 1e-06; scale 0.0625; window 512; biases none\n"
                     "  layers i with (i + 1) % 6 == 0 (5, 11, ...): E=64 H=4 Hkv=4 D=256; RoPE theta 1e+06; QK-norm per "
                     "head by 1 + w eps 1e-06; scale 0.0625; every key; biases none\n" "  cache per token and layer: 8192 bytes in f32, 4096 in bf16 or f16, 2080 in int8 (codes and scales)\n");
    const std::string llama = tmp.file("llama.json");
    std::ofstream(llama) << R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2147483647})";
    const CliResult alike = hattn("inspect " + llama);
    EXPECT_EQ(alike.out, llama + ": cached_attention, 2147483647 layers\n  layers 0-2147483646: E=64 H=4 Hkv=4 D=16; RoPE "
                                 "theta 10000; every key; biases none\n  cache per token and layer: 512 bytes in "
                                 "f32, 256 in bf16 or f16, 160 in int8 (codes and scales)\n");
    // Layers listed one by one are read one by one, so only so many.
    const std::string listed = tmp.file("listed.json");
    std::ofstream(listed) << R"({"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 100000,
        "layer_types": ["full_attention"]})";
    expect_one_line_naming(hattn("inspect " + listed), "num_hidden_layers 100000 with layers listed one by one");
    const std::string negative = tmp.file("negative.json");
    std::ofstream(negative) << R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": -5})";
    expect_one_line_naming(hattn("inspect " + negative), "num_hidden_layers must not be negative, got -5");
}

// A FIFO as an input blocked open() forever; now it is refused by name at once.
TEST_F(Cli, AFifoAsAnyInputIsRefusedAtOnce) {
    const std::string dir = make_case("c", good_config());
    const std::string fifo = tmp.file("x.npy");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    expect_one_line_naming(hattn("run --kind cached_attention --config " + tmp.file("nothing.json") + " --weights " + dir +
                                 "/weights.safetensors --input " + fifo + " --output " + tmp.file("o.npy")),
                           "nothing.json: cannot open: file not found");
    std::filesystem::rename(dir + "/x.npy", tmp.file("saved.npy"));
    ASSERT_EQ(::mkfifo((dir + "/x.npy").c_str(), 0600), 0);
    expect_one_line_naming(hattn("run --case " + dir + " --output " + tmp.file("o.npy")),
                           dir + "/x.npy: not a regular file (a FIFO)");
    expect_one_line_naming(hattn("inspect " + fifo), fifo + ": not a regular file (a FIFO)");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));  // (it did not block)
}

// A byte flipped to a newline in a string of the config split the message; a config could forge a
// second "hattn:" line. The message is one line, the string escaped.
TEST_F(Cli, AStringWithANewlineStaysOnTheMessagesLine) {
    const std::string dir = make_case("c", R"({"kind": "cached\nhattn: all is well", "batch": 1, "seq_len": 3, "config": {}})");
    const CliResult r = hattn("run --case " + dir + " --output " + tmp.file("o.npy"));
    expect_one_line_naming(r, "unknown kind 'cached\\nhattn: all is well'");
    // A prefix of 30,000 digits overflowed std::regex's stack (SIGSEGV).
    const std::string digits(30000, '9'), layer = tmp.file("layer.json");
    std::ofstream(layer) << R"({"embedding_dimension": 8, "number_of_heads": 2, "bias": false})";
    expect_one_line_naming(hattn("run --kind cached_attention --config " + layer + " --weights " + dir +
                                 "/weights.safetensors --input " + dir + "/x.npy --prefix model.layers." + digits +
                                 ".self_attn. --output " + tmp.file("o.npy")),
                           "is too large");
}

}  // namespace
}  // namespace hattn
