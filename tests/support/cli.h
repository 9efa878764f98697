// The hattn executable run as a user runs it, for the CLI tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "hattn/npy.h"
#include "hattn/safetensors_writer.h"
#include "support/random.h"
#include "support/temp_dir.h"

namespace hattn::testing {

struct CliResult {
    int status;
    std::string out, err;
};

inline std::string slurp(const std::string &path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

class Cli : public ::testing::Test {
protected:
    TempDir tmp;

    // Runs the CLI with `args`, after `env` (e.g. "NAME=value") when given.
    CliResult hattn(const std::string &args, const std::string &env = "") {
        const std::string out = tmp.file("stdout"), err = tmp.file("stderr");
        const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(HATTN_CLI) + " " +
                                args + " >" + out + " 2>" + err;
        const int raw = std::system(cmd.c_str());
        return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
    }

    // A well-formed cached_attention case folder (E=8, 2 heads, self-attention).
    std::string make_case(const std::string &name, const std::string &config_json) {
        const std::filesystem::path dir = tmp.path() / name;
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "config.json") << config_json;
        const Tensor w = random_tensor({8, 8}, 5);
        write_safetensors((dir / "weights.safetensors").string(),
                                   {{"query_projection.weight", w}, {"key_projection.weight", w},
                                    {"value_projection.weight", w}, {"output_projection.weight", w}});
        write_npy((dir / "x.npy").string(), random_tensor({1, 3, 8}, 6));
        return dir.string();
    }

    std::string good_config() {
        return R"({"kind": "cached_attention", "batch": 1, "seq_len": 3,
                   "config": {"embedding_dimension": 8, "number_of_heads": 2, "bias": false,
                              "attention_type": "multi_head", "rope_base": null}})";
    }

    static void expect_one_line_naming(const CliResult &r, const std::string &what) {
        EXPECT_EQ(r.status, 2) << r.err;
        EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
};

}  // namespace hattn::testing
