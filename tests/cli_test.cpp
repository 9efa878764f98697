// `hattn run`, `inspect` and `info` as a user meets them: bad input exits 2 with one line that names
// the file, tensor or key; nothing is written.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hattn/npy.h"
#include "support/compare.h"
#include "support/random.h"
#include "hattn/safetensors_writer.h"
#include "support/cli.h"
#include "support/temp_dir.h"

namespace hattn {
namespace {

using testing::Cli;
using testing::CliResult;
using testing::slurp;

TEST_F(Cli, TruncatedSafetensorsNamesFileAndProblem) {
    const std::string dir = make_case("c", good_config());
    const std::string weights = dir + "/weights.safetensors";
    std::filesystem::resize_file(weights, std::filesystem::file_size(weights) - 10);
    const CliResult r = hattn("run --case " + dir + " --output " + tmp.file("o.npy"));
    expect_one_line_naming(r, weights);
    EXPECT_NE(r.err.find("end of"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.file("o.npy")));
}

TEST_F(Cli, InspectRejectsTruncatedSafetensors) {
    const std::string dir = make_case("c", good_config());
    const std::string weights = dir + "/weights.safetensors";
    std::filesystem::resize_file(weights, 5);
    expect_one_line_naming(hattn("inspect " + weights), weights);
}

// Judged by its name: a damaged .npy is reported as a .npy, not as a damaged safetensors file.
TEST_F(Cli, InspectJudgesAFileByItsName) {
    const std::string garbage = tmp.file("x.npy");
    std::ofstream(garbage) << "garbage, not an array";
    expect_one_line_naming(hattn("inspect " + garbage), garbage + ": not a .npy file (bad magic)");
}

TEST_F(Cli, InspectListsTensors) {
    const std::string dir = make_case("c", good_config());
    const CliResult r = hattn("inspect " + dir + "/weights.safetensors");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("query_projection.weight  F32  [8, 8]"), std::string::npos) << r.out;
    const CliResult n = hattn("inspect " + dir + "/x.npy");
    EXPECT_EQ(n.status, 0) << n.err;
    EXPECT_NE(n.out.find("<f4 [1, 3, 8]"), std::string::npos) << n.out;
}

// A model's config.json: how each layer reads it, consecutive equal layers on one line (Gemma 3:
// every sixth layer full, the others sliding), before any weights are loaded.
TEST_F(Cli, InspectDescribesAModelConfigLayerByLayer) {
    const std::string gemma3 = tmp.file("config.json");
    std::ofstream(gemma3) << R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "hidden_size": 2560,
        "num_hidden_layers": 7, "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "sliding_window": 1024}})";
    const CliResult r = hattn("inspect " + gemma3);
    EXPECT_EQ(r.status, 0) << r.err;
    const std::string sliding = "E=2560 H=8 Hkv=4 D=256; RoPE theta 10000; QK-norm per head by 1 + w eps 1e-06; scale 0.0625; "
                                "window 1024; biases none";
    EXPECT_EQ(r.out, gemma3 + ": cached_attention, 7 layers\n  layers 0-4: " + sliding +
                         "\n  layer 5: E=2560 H=8 Hkv=4 D=256; RoPE theta 1e+06, linear x8; QK-norm per head by 1 + w eps "
                         "1e-06; scale 0.0625; every key; biases none\n  layer 6: " + sliding + "\n" +
                         // Hkv x D = 4 x 256 keys and values: 2 x 1024 floats, or int8 codes and a scale a head.
                         "  cache per token and layer: 8192 bytes in f32, 4096 in bf16 or f16, 2080 in int8 (codes and scales)\n");
    // EmbeddingGemma: Gemma 3's layers, attending both ways (its 512-key window kept as 257 each way).
    const std::string embedding = tmp.file("embeddinggemma.json");
    std::ofstream(embedding) << R"({"model_type": "gemma3_text", "hidden_size": 768, "num_attention_heads": 3,
        "num_key_value_heads": 1, "head_dim": 256, "num_hidden_layers": 6, "sliding_window": 512,
        "use_bidirectional_attention": true})";
    const CliResult both_ways = hattn("inspect " + embedding);
    EXPECT_EQ(both_ways.out, embedding + ": cached_attention, 6 layers\n  layers 0-4: E=768 H=3 Hkv=1 D=256; RoPE theta "
                                         "10000; QK-norm per head by 1 + w eps 1e-06; scale 0.0625; window 257 both ways; "
                                         "biases none\n  layer 5: E=768 H=3 Hkv=1 D=256; RoPE theta 1e+06; QK-norm per head "
                                         "by 1 + w eps 1e-06; scale 0.0625; every key both ways; biases none\n"
                                         "  cache per token and layer: 2048 bytes in f32, 1024 in bf16 or f16, 520 in "
                                         "int8 (codes and scales)\n");
    // Gemma 3 with attn_logit_softcapping stated: not capped, as transformers does not, and so noted.
    const std::string capped_gemma3 = tmp.file("capped_gemma3.json");
    std::ofstream(capped_gemma3) << R"({"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 4,
        "num_hidden_layers": 1, "attn_logit_softcapping": 30.0, "layer_types": ["full_attention"]})";
    const CliResult uncapped = hattn("inspect " + capped_gemma3);
    EXPECT_EQ(uncapped.out, capped_gemma3 + ": cached_attention, 1 layers\n  layer 0: E=64 H=4 Hkv=4 D=256; RoPE theta "
                                            "1e+06; QK-norm per head by 1 + w eps 1e-06; scale 0.0625; every key; biases "
                                            "none\n" "  cache per token and layer: 8192 bytes in f32, 4096 in bf16 or f16, 2080 in int8 (codes and scales)\n"
                                            "  note: attn_logit_softcapping is ignored: transformers' Gemma3Attention "
                                            "stores it and never applies it\n");
    // Gemma 2: sliding and full layers alternate, their scores soft-capped (50 by default).
    const std::string gemma2 = tmp.file("gemma2.json");
    std::ofstream(gemma2) << R"({"model_type": "gemma2", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2})";
    const CliResult capped = hattn("inspect " + gemma2);
    EXPECT_EQ(capped.out, gemma2 + ": cached_attention, 2 layers\n  layer 0: E=64 H=4 Hkv=4 D=256; RoPE theta 10000; scale "
                                   "0.0625; window 4096; scores soft-capped at 50; biases none\n  layer 1: E=64 H=4 Hkv=4 "
                                   "D=256; RoPE theta 10000; scale 0.0625; every key; scores soft-capped at 50; biases none\n" +
                      std::string("  cache per token and layer: 8192 bytes in f32, 4096 in bf16 or f16, 2080 in int8 (codes and scales)\n"));
    // Llama 4: three layers of four attend in chunks, rotate pairs and norm q and k without weights;
    // the fourth scales its queries by position.
    const std::string llama4 = tmp.file("llama4.json");
    std::ofstream(llama4) << R"({"model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 4, "no_rope_layers": []})";
    const CliResult chunked = hattn("inspect " + llama4);
    EXPECT_EQ(chunked.out, llama4 + ": cached_attention, 4 layers\n  layers 0-2: E=5120 H=40 Hkv=8 D=128; RoPE theta 500000, "
                                    "interleaved pairs; QK-norm per head without weights eps 1e-05; chunks of 8192; biases "
                                    "none\n  layer 3: E=5120 H=40 Hkv=8 D=128; no RoPE; every key; queries scaled by "
                                    "log(1 + floor((p + 1) / 8192)) * 0.1 + 1; biases none\n"
                                    "  cache per token and layer: 8192 bytes in f32, 4096 in bf16 or f16, 2112 in int8 "
                                    "(codes and scales)\n");
    // A refused config prints nothing but its one line.
    const std::string olmo = tmp.file("olmo.json");
    std::ofstream(olmo) << R"({"model_type": "olmo", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
        "clip_qkv": -1})";
    const CliResult refused = hattn("inspect " + olmo);
    expect_one_line_naming(refused, "clip_qkv must be positive (or null for none), got -1.000000");
    EXPECT_EQ(refused.out, "");
    // So does one read as a seed config (no num_hidden_layers).
    const std::string empty = tmp.file("empty.json");
    std::ofstream(empty) << "{}";
    const CliResult incomplete = hattn("inspect " + empty);
    expect_one_line_naming(incomplete, "missing key 'embedding_dimension'");
    EXPECT_EQ(incomplete.out, "");
}

TEST_F(Cli, UnknownKindIsNamed) {
    std::string config = good_config();
    config.replace(config.find("cached_attention"), 16, "flash_magic");
    expect_one_line_naming(hattn("run --case " + make_case("c", config) + " --output " +
                                 tmp.file("o.npy")),
                           "unknown kind 'flash_magic'");
}

// Sizes are tensor extents (32-bit in the kernels) and what they need must be allocatable: past
// either, one line, not an internal error or a wrapped size.
TEST_F(Cli, BenchRefusesSizesItCannotHold) {
    expect_one_line_naming(hattn("bench prefill --heads 2 --seq 4294967296 --head-dim 16"),
                           "--seq must be at most 2^31 - 1, got 4294967296");
    expect_one_line_naming(hattn("bench decode --heads 2 --kv-len 16 --head-dim 8 --reps 4294967297"),
                           "--reps must be at most 2^31 - 1");
    expect_one_line_naming(hattn("bench prefill --heads 65536 --seq 65536 --head-dim 65536 --batch 65536"),
                           "overflows int64");
    // 2^62 floats: more than a vector can hold, refused before any memory is touched.
    expect_one_line_naming(hattn("bench prefill --heads 1048576 --seq 2097152 --head-dim 2097152"),
                           "tensor of shape [1, 2097152, 1048576, 2097152] needs 17179869184 GiB, more memory than "
                           "can be allocated");
    expect_one_line_naming(hattn("bench layer --layer gqa --hidden 72 --heads 9 --seq 8"),
                           "bench layer gqa: --heads 9 is not a multiple of its 2 KV heads (H/4)");
}

TEST_F(Cli, BenchOfAnUnknownLayerExits2) {
    expect_one_line_naming(hattn("bench layer --layer linformer --hidden 64 --heads 4 --seq 8"), "'linformer'");
}

TEST_F(Cli, BenchPrintsOneJsonLine) {
    const CliResult r = hattn("bench layer --layer dsa --hidden 64 --heads 4 --seq 8 --reps 1");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\"tokens_per_s\""), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

// Bench lines say the storage types they ran in; types this build does not run are refused.
TEST_F(Cli, BenchSaysItsStorageTypes) {
    const CliResult r = hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --reps 1");
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("dtype"), "f32");
    EXPECT_EQ(j.at("kv_dtype"), "f32");
    // A bf16 cache runs its own kernel, and its bytes count as stored: 2 heads x 16 keys x 8 values
    // x 2 bytes, for keys and values.
    const CliResult bf16 = hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --reps 1 --kv-dtype bf16");
    ASSERT_EQ(bf16.status, 0) << bf16.err;
    const nlohmann::json b = nlohmann::json::parse(bf16.out);
    EXPECT_EQ(b.at("kv_dtype"), "bf16");
    EXPECT_NEAR(b.at("gbs").get<double>() * b.at("ms").get<double>() * 1e6, 2.0 * 2 * 16 * 8 * 2, 1e-6);
    const nlohmann::json layer = nlohmann::json::parse(
        hattn("bench layer --layer gqa --hidden 64 --heads 4 --decode --kv-len 8 --reps 1 --dtype f16").out);
    EXPECT_EQ(layer.at("kv_bytes_per_token"), 2 * 1 * 16 * 2);  // one KV head of 16 f16 values, K and V
    // int8: a row's 8 codes and its float32 scale.
    const CliResult int8 = hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --reps 1 --kv-dtype int8");
    ASSERT_EQ(int8.status, 0) << int8.err;
    const nlohmann::json i = nlohmann::json::parse(int8.out);
    EXPECT_NEAR(i.at("gbs").get<double>() * i.at("ms").get<double>() * 1e6, 2.0 * 2 * 16 * (8 + 4), 1e-6);
    expect_one_line_naming(hattn("bench layer --layer mha --hidden 72 --heads 4 --decode --kv-len 8 --kv-dtype int8"),
                           "cached_attention: an int8 cache needs a head dimension that is a multiple of 4, got 18");
    expect_one_line_naming(hattn("bench prefill --heads 2 --head-dim 8 --seq 16 --dtype f8"),
                           "--dtype must be one of f32, f16, bf16, int8, got 'f8'");
}

// --kernel-times adds the run broken down by kernel: one decode call is one attention_decode call.
TEST_F(Cli, BenchBreaksARunDownByKernel) {
    const CliResult r = hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --reps 2 --kernel-times");
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const nlohmann::json &times = j.at("kernel_times");
    EXPECT_EQ(times.at("runs"), 2);
    ASSERT_EQ(times.at("kernels").size(), 1u) << r.out;
    EXPECT_EQ(times.at("kernels")[0].at("kernel"), "attention_decode");
    EXPECT_EQ(times.at("kernels")[0].at("calls"), 1);
    EXPECT_GE(times.at("ms").get<double>(), times.at("kernels")[0].at("device_ms").get<double>());
}

TEST_F(Cli, RunsACachedAttentionCase) {
    const CliResult r = hattn("run --case " + make_case("c", good_config()) + " --prefill 1 --output " +
                              tmp.file("o.npy"));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(read_npy_f32(tmp.file("o.npy")).shape(), Shape({1, 3, 8}));
}

// A Hugging Face config's torch_dtype (or transformers 5's dtype) is the checkpoint's storage type:
// inspect names it, and what a layer's cache takes per token in each storage type.
TEST_F(Cli, InspectReportsTheCheckpointsDtypeAndCacheBytes) {
    const std::string qwen = tmp.file("qwen.json");
    std::ofstream(qwen) << R"({"model_type": "qwen2", "hidden_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "torch_dtype": "bfloat16"})";
    const CliResult r = hattn("inspect " + qwen);
    EXPECT_EQ(r.status, 0) << r.err;
    // 2 KV heads of 32: 2 x 64 floats a token; int8: 2 x 2 x (32 codes + a 4-byte scale).
    EXPECT_NE(r.out.find("\n  checkpoint dtype bfloat16: layers store what --dtype asks (f32 unless asked)\n"
                         "  cache per token and layer: 512 bytes in f32, 256 in bf16 or f16, 144 in int8 (codes and "
                         "scales)\n"),
              std::string::npos)
        << r.out;
    const std::string odd = tmp.file("odd.json");
    std::ofstream(odd) << R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "dtype": "int4\nhattn: x"})";
    const CliResult weird = hattn("inspect " + odd);
    EXPECT_NE(weird.out.find("  checkpoint dtype (not float32, bfloat16 or float16): "), std::string::npos) << weird.out;
}

// --report says what the run used: its storage types, the bytes of the layer's weights (4 of 8 x 8
// floats, no biases) and of its cache per token (keys and values: 2 x 8 floats).
TEST_F(Cli, RunReportsWhatItUsed) {
    const CliResult r = hattn("run --case " + make_case("c", good_config()) + " --prefill 1 --output " +
                              tmp.file("o.npy") + " --report " + tmp.file("report.json"));
    EXPECT_EQ(r.status, 0) << r.err;
    const nlohmann::json report = nlohmann::json::parse(slurp(tmp.file("report.json")));
    EXPECT_EQ(report, nlohmann::json({{"dtype", "f32"}, {"kv_dtype", "f32"}, {"weight_bytes", 4 * 8 * 8 * 4},
                                      {"cache_bytes_per_token", 2 * 8 * 4}}));
}

// A case or flags naming storage types this build does not run are refused in one line, nothing
// written: a run in f32 would pass a low-precision case's tolerance and show nothing.
TEST_F(Cli, StorageTypesAreCheckedAndReported) {
    std::string config = good_config();
    config.replace(config.find("\"batch\""), 0, "\"dtype\": \"bf16\", ");
    const std::string dir = make_case("c", config);
    // The case's types, and the bytes the layer holds in them: 4 weights of 8 x 8 bf16 values, a
    // cache row of 2 heads x 4 bf16 values for keys and values.
    ASSERT_EQ(hattn("run --case " + dir + " --output " + tmp.file("o.npy") + " --report " + tmp.file("r.json")).status, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(tmp.file("r.json"))),
              nlohmann::json({{"dtype", "bf16"}, {"kv_dtype", "bf16"}, {"weight_bytes", 4 * 8 * 8 * 2},
                              {"cache_bytes_per_token", 2 * 2 * 4 * 2}}));
    ASSERT_EQ(hattn("run --case " + dir + " --kv-dtype f16 --output " + tmp.file("o.npy") + " --report " + tmp.file("r.json")).status, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(tmp.file("r.json"))),
              nlohmann::json({{"dtype", "bf16"}, {"kv_dtype", "f16"}, {"weight_bytes", 4 * 8 * 8 * 2},
                              {"cache_bytes_per_token", 2 * 2 * 4 * 2}}));
    // An int8 cache row: 4 codes and a float32 scale, per KV head, for keys and values.
    ASSERT_EQ(hattn("run --case " + dir + " --kv-dtype int8 --output " + tmp.file("o.npy") + " --report " + tmp.file("r.json")).status, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(tmp.file("r.json"))),
              nlohmann::json({{"dtype", "bf16"}, {"kv_dtype", "int8"}, {"weight_bytes", 4 * 8 * 8 * 2},
                              {"cache_bytes_per_token", 2 * 2 * (4 + 4)}}));
    EXPECT_EQ(hattn("run --case " + dir + " --dtype f32 --output " + tmp.file("o.npy")).status, 0);
    expect_one_line_naming(hattn("run --case " + dir + " --dtype int8 --output " + tmp.file("o.npy")),
                           "--dtype: int8 is a cache's storage type only (kv_dtype)");
    expect_one_line_naming(hattn("run --case " + dir + " --dtype fp16 --output " + tmp.file("o.npy")),
                           "--dtype must be one of f32, f16, bf16, int8, got 'fp16'");
    std::string typo = good_config();
    typo.replace(typo.find("\"batch\""), 0, "\"kv_dtype\": \"int4\", ");
    expect_one_line_naming(hattn("run --case " + make_case("t", typo) + " --output " + tmp.file("o.npy")),
                           "key 'kv_dtype' must be one of f32, f16, bf16, int8, got 'int4'");
}

// One layer of a whole model: its own config.json (HF keys) and a checkpoint whose names carry the
// layer's prefix. The same weights as the seed case give the same output.
TEST_F(Cli, RunsOneLayerOfAHuggingFaceCheckpoint) {
    std::string seed_config = good_config();
    seed_config.replace(seed_config.find("\"rope_base\": null"), 17, "\"rope_base\": 10000");
    const std::string dir = make_case("c", seed_config);
    ASSERT_EQ(hattn("run --case " + dir + " --output " + tmp.file("seed.npy")).status, 0);
    const Tensor w = testing::random_tensor({8, 8}, 5);  // make_case's weight
    const std::string p = "model.layers.7.self_attn.";
    write_safetensors(tmp.file("model.safetensors"), {{p + "q_proj.weight", w}, {p + "k_proj.weight", w},
                                                      {p + "v_proj.weight", w}, {p + "o_proj.weight", w},
                                                      {"model.layers.6.self_attn.q_proj.weight", Tensor({1})}});
    std::ofstream(tmp.file("config.json")) << R"({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2,
                                                 "rope_theta": 10000, "vocab_size": 32000})";
    const std::string files = "run --kind cached_attention --config " + tmp.file("config.json") + " --weights " +
                              tmp.file("model.safetensors") + " --input " + dir + "/x.npy --output " + tmp.file("hf.npy");
    const CliResult r = hattn(files + " --prefix " + p);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_LE(testing::relative_l2(read_npy_f32(tmp.file("hf.npy")), read_npy_f32(tmp.file("seed.npy"))), 1e-6);
    expect_one_line_naming(hattn(files), "q_proj.weight");  // without the prefix: not found, named
}

TEST_F(Cli, InvalidLayerConfigNamesTheKey) {
    std::string config = good_config();
    config.replace(config.find("\"multi_head\""), 12, "\"sparse_magic\"");
    expect_one_line_naming(
        hattn("run --case " + make_case("c", config) + " --output " + tmp.file("o.npy")),
        "attention_type 'sparse_magic'");
}

TEST_F(Cli, InputOfWrongShapeNamesFileAndShapes) {
    const std::string dir = make_case("c", good_config());
    write_npy(dir + "/x.npy", testing::random_tensor({1, 4, 8}, 7));
    const CliResult r = hattn("run --case " + dir + " --output " + tmp.file("o.npy"));
    expect_one_line_naming(r, dir + "/x.npy");
    EXPECT_NE(r.err.find("[1, 4, 8]"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("[1, 3, 8]"), std::string::npos) << r.err;
}

TEST_F(Cli, MissingHiddenSizeKeyIsNamed) {
    std::string config = good_config();
    config.replace(config.find("embedding_dimension"), 19, "embedding_dim");
    expect_one_line_naming(
        hattn("run --case " + make_case("c", config) + " --output " + tmp.file("o.npy")),
        "embedding_dimension");
}

TEST_F(Cli, MalformedConfigIsNamed) {
    const std::string dir = make_case("c", "{\"kind\": ");
    expect_one_line_naming(hattn("run --case " + dir + " --output " + tmp.file("o.npy")),
                           dir + "/config.json");
}

TEST_F(Cli, MissingInputFileIsNamed) {
    const std::string dir = make_case("c", good_config());
    std::filesystem::remove(dir + "/x.npy");
    expect_one_line_naming(hattn("run --case " + dir + " --output " + tmp.file("o.npy")),
                           dir + "/x.npy");
}

TEST_F(Cli, PrefillOutOfRangeExits2) {
    expect_one_line_naming(hattn("run --case " + make_case("c", good_config()) + " --prefill 4 --output " +
                                 tmp.file("o.npy")),
                           "--prefill 4");
}

TEST_F(Cli, PrefillOnCrossAttentionExits2) {
    std::string config = good_config();
    config.replace(config.find("\"batch\""), 0, "\"cross\": true, ");
    const std::string dir = make_case("c", config);
    write_npy(dir + "/context.npy", testing::random_tensor({1, 5, 8}, 8));
    expect_one_line_naming(hattn("run --case " + dir + " --prefill 1 --output " + tmp.file("o.npy")),
                           "not causal");
}

// A mode the layer refuses is named as such, not taken for the encoder's (which has no prefill).
TEST_F(Cli, PrefillWithAnUnknownModeNamesTheMode) {
    const std::string dir = make_case("sideways", R"({"kind": "cca", "batch": 1, "seq_len": 3,
                                                     "config": {"hidden_size": 8, "num_heads": 1, "cca_value_shift": false,
                                                                "mode": "sideways"}})");
    expect_one_line_naming(hattn("run --case " + dir + " --prefill 1 --output " + tmp.file("o.npy")),
                           "mode must be encoder or decoder, got 'sideways'");
}

TEST_F(Cli, CrossWithoutContextExits2) {
    std::string config = good_config();
    config.replace(config.find("\"batch\""), 0, "\"cross\": true, ");
    expect_one_line_naming(
        hattn("run --case " + make_case("c", config) + " --output " + tmp.file("o.npy")),
        "context");
}

// Masks and contexts belong to cached_attention: another kind given one says so rather than
// running without it.
TEST_F(Cli, AMaskOrContextForAnotherKindExits2) {
    const std::string cca = R"({"kind": "cca", "batch": 1, "seq_len": 3,
                                "config": {"hidden_size": 8, "num_heads": 2}})";
    const std::string masked = make_case("masked", cca);
    write_npy(masked + "/mask.npy", Tensor({1, 1, 3, 3}));
    expect_one_line_naming(hattn("run --case " + masked + " --output " + tmp.file("o.npy")),
                           "mask.npy: kind cca takes no mask");
    const std::string with_context = make_case("context", cca);
    write_npy(with_context + "/context.npy", testing::random_tensor({1, 5, 8}, 8));
    expect_one_line_naming(hattn("run --case " + with_context + " --output " + tmp.file("o.npy")),
                           "context.npy: kind cca takes no context");
    EXPECT_FALSE(std::filesystem::exists(tmp.file("o.npy")));
}

TEST_F(Cli, ANonFiniteInputIsNamed) {
    const std::string dir = make_case("nan", good_config());
    Tensor x = testing::random_tensor({1, 3, 8}, 6);
    x.data()[13] = std::nanf("");
    write_npy(dir + "/x.npy", x);
    expect_one_line_naming(hattn("run --case " + dir + " --output " + tmp.file("o.npy")),
                           "x.npy: element 13 is NaN; inputs must be finite");
    x.data()[13] = std::numeric_limits<float>::infinity();
    write_npy(dir + "/x.npy", x);
    expect_one_line_naming(hattn("run --case " + dir + " --output " + tmp.file("o.npy")), "element 13 is infinite");
}

TEST_F(Cli, ThreadCountOutOfRangeExits2) {
    expect_one_line_naming(hattn("run --case " + make_case("c", good_config()) + " --output " + tmp.file("o.npy") +
                                 " --threads 4294967297"),
                           "--threads must be in 1..4096");
}

TEST_F(Cli, UnknownFlagAndDeviceAreNamed) {
    expect_one_line_naming(hattn("frobnicate"), "unknown command 'frobnicate'");
    expect_one_line_naming(hattn("run --frobnicate 3"), "--frobnicate");
    expect_one_line_naming(hattn("run --case x --output y --device tpu"), "tpu");
}

// A flag of another benchmark, or one given twice, would otherwise be silently ignored or
// overridden: the run would measure something other than what was asked.
TEST_F(Cli, BenchTakesOnlyItsOwnFlagsOnce) {
    expect_one_line_naming(hattn("bench decode --heads 4 --seq 16 --head-dim 16"), "bench decode: unknown flag --seq");
    expect_one_line_naming(hattn("bench prefill --heads 4 --seq 16 --head-dim 16 --kv-len 5"),
                           "bench prefill: unknown flag --kv-len");
    expect_one_line_naming(hattn("bench decode --heads 4 --heads 8 --kv-len 16 --head-dim 16"), "--heads is given twice");
    expect_one_line_naming(hattn("bench layer --layer mha --hidden 64 --heads 4 --decode"),
                           "bench layer --decode needs --kv-len");
    expect_one_line_naming(hattn("bench layer --layer mha --hidden 64 --heads 4 --decode --kv-len 8 --seq 4"),
                           "bench layer --decode takes --kv-len, not --seq");
    expect_one_line_naming(hattn("bench --heads 4 decode"), "the benchmark comes first");
    expect_one_line_naming(hattn("run --case x --case x --output o.npy"), "--case is given twice");
    // A flag's value is never the next flag, and a number has no white space around it.
    expect_one_line_naming(hattn("run --case --output o.npy"), "--case needs a value");
    expect_one_line_naming(hattn("bench decode --heads ' 4' --kv-len 16 --head-dim 16"), "--heads must be an integer");
    expect_one_line_naming(hattn("bench decode --heads '4 ' --kv-len 16 --head-dim 16"), "--heads must be an integer");
    expect_one_line_naming(hattn("run --case x --output ''"), "--output must name a file, got ''");
    // A layer benchmark's config comes from its flags and the seed's defaults: its errors say so.
    expect_one_line_naming(hattn("bench layer --layer ccgqa --hidden 64 --heads 4"),
                           "bench layer ccgqa --hidden 64 --heads 4 (the seed's defaults for the rest): "
                           "ccgqa_value_shift needs an even number of KV heads, got 1");
}

TEST_F(Cli, BenchReportsTheThreadsItRanOn) {
    const CliResult one = hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --reps 1 --threads 1");
    EXPECT_EQ(one.status, 0) << one.err;
    EXPECT_NE(one.out.find("\"threads\":1,"), std::string::npos) << one.out;
    const CliResult all = hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --reps 1", "HL_NUM_THREADS=3");
    EXPECT_NE(all.out.find("\"threads\":3,"), std::string::npos) << all.out;
    const CliResult capped = hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --reps 1 --threads 1000");
    EXPECT_NE(capped.out.find("\"threads\":256,"), std::string::npos) << capped.out;  // Halide's most
}

// --softcap runs the kernels' soft-capping branch (and says so); a value it cannot take is refused.
TEST_F(Cli, BenchSoftCapsTheScoresWhenAsked) {
    const CliResult r = hattn("bench prefill --heads 2 --seq 8 --head-dim 8 --reps 1 --softcap 30");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\"softcap\":30.0"), std::string::npos) << r.out;
    expect_one_line_naming(hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --softcap x"),
                           "--softcap must be a finite number, got 'x'");
    expect_one_line_naming(hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --softcap -1"),
                           "--softcap must be 0 (none) or a positive normal float");
    expect_one_line_naming(hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --softcap 1e-50"),
                           "--softcap must be 0 (none) or a positive normal float");
}

TEST_F(Cli, BenchNamesAnUnknownSchedule) {
    expect_one_line_naming(hattn("bench prefill --heads 2 --seq 8 --head-dim 8 --schedule fastest"), "--schedule");
}

TEST_F(Cli, BenchRunsTheChosenScheduleAndDevice) {
    // (The autoscheduled families plan for their estimate sizes, far above this tiny shape.)
    const CliResult r = hattn("bench decode --heads 2 --head-dim 8 --kv-len 16 --reps 1 --schedule hand");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\"schedule\":\"hand\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"device\":\"cpu\""), std::string::npos) << r.out;
}

TEST_F(Cli, MaxIsaCapsTheChosenSubTarget) {
    const CliResult r = hattn("info", "HATTN_MAX_ISA=sse41");
    EXPECT_EQ(r.status, 0) << r.err;
#if defined(__x86_64__)
    EXPECT_NE(r.out.find("x86-64-linux-sse41-large_buffers"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("avx2-large_buffers"), std::string::npos) << r.out;
#endif
    expect_one_line_naming(hattn("run --case " + make_case("c", good_config()) + " --output " + tmp.file("o.npy"),
                                 "HATTN_MAX_ISA=avx9"),
                           "HATTN_MAX_ISA");
}

TEST_F(Cli, MemoryPoolSettingIsCheckedAndZeroIsAccepted) {
    const std::string run = "run --case " + make_case("c", good_config()) + " --output " + tmp.file("o.npy");
    expect_one_line_naming(hattn(run, "HATTN_MEMORY_POOL_MB=lots"), "HATTN_MEMORY_POOL_MB");
    const CliResult r = hattn(run, "HATTN_MEMORY_POOL_MB=0");
    EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(Cli, RunWithoutACaseOrKindSaysWhatItNeeds) {
    expect_one_line_naming(hattn("run --output " + tmp.file("o.npy")), "run: give --case DIR, or the files one by one");
}

TEST_F(Cli, InfoPrintsNothingWhenItFails) {
    const CliResult r = hattn("info", "HATTN_MAX_ISA=avx9");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
}

TEST_F(Cli, InfoNamesEveryKernel) {
    const CliResult r = hattn("info");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("CPU features:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("projection"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("attention_decode_bf16"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("bf16 dot products (vdpbf16ps): "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("CUDA: "), std::string::npos) << r.out;
    // Below AVX-512 BF16 no kernel multiplies bf16 pairs.
    const CliResult avx2 = hattn("info", "HATTN_MAX_ISA=avx2");
    EXPECT_NE(avx2.out.find("bf16 dot products (vdpbf16ps): no kernel on this CPU"), std::string::npos) << avx2.out;
}

}  // namespace
}  // namespace hattn
