// The GPU prefill's block tiles: the runtime picks them by the shared memory bound of
// kernel_contract.h, so that bound must cover what the generated kernels ask for. Halide decides
// that (it packs allocations whose lifetimes do not overlap); its CUDA host code, in the .stmt the
// default build writes beside each CUDA kernel, passes it to every launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "kernel_contract.h"
#include "support/variants.h"

namespace hattn {
namespace {

// Each launch's shared memory in bytes, in the order of the .stmt: "halide_cuda_run(cuda[0],
// "<kernel>", blocks, threads, 0 + ((t + W)*4), ...)", t being a count of extra query tiles that
// is 0 for the buffers the runtime passes (their minimum is 0).
std::vector<long long> launch_shared_bytes(const std::string &stmt_path) {
    std::ifstream file(stmt_path, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    const std::string stmt = text.str();
    static const std::regex launch(R"(halide_cuda_run\(cuda\[0\], "[^"]*", [^;]*?, 0 \+ \(\(t[0-9]+ \+ ([0-9]+)\)\*4\))");
    std::vector<long long> bytes;
    for (auto it = std::sregex_iterator(stmt.begin(), stmt.end(), launch); it != std::sregex_iterator(); ++it) {
        bytes.push_back(4 * std::stoll((*it)[1]));
    }
    return bytes;
}

struct TileFamily {
    const char *family;  // of attention_prefill, as the kernel table names it
    kernel_contract::GpuPrefillTiles tiles;
};

class GpuPrefillSharedMemory : public ::testing::TestWithParam<TileFamily> {};

// One launch per head dim with block tiles, their sizes rising with the head dim as the bound's do:
// the i-th smallest launch against the bound of the i-th smallest head dim.
TEST_P(GpuPrefillSharedMemory, TheContractsBoundCoversEveryLaunch) {
    const TileFamily f = GetParam();
    if (!testing::has_variant("attention_prefill", f.family)) GTEST_SKIP() << "this build has no " << f.family << " prefill";
    const std::string path = std::string(HATTN_KERNEL_DIR) + "/hattn_attention_prefill_" + f.family + ".stmt";
    ASSERT_TRUE(std::ifstream(path).good()) << path << " is missing (the default build writes it)";
    const std::vector<long long> launches = launch_shared_bytes(path);
    std::vector<int> dims(std::begin(kernel_contract::gpu_prefill_block_tile_head_dims),
                          std::end(kernel_contract::gpu_prefill_block_tile_head_dims));
    ASSERT_EQ(launches.size(), dims.size()) << "launches found in " << path;
    std::sort(dims.begin(), dims.end());
    std::vector<long long> sorted = launches;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < dims.size(); i++) {
        const long long bound = kernel_contract::gpu_prefill_block_tile_shared_bytes(dims[i], f.tiles);
        EXPECT_LE(sorted[i], bound) << f.family << " at head dim " << dims[i];
        EXPECT_GT(sorted[i], 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Tiles, GpuPrefillSharedMemory,
                         ::testing::Values(TileFamily{"cuda_hand", kernel_contract::gpu_prefill_tiles},
                                           TileFamily{"cuda_small_tiles", kernel_contract::gpu_prefill_small_tiles}),
                         [](const auto &info) { return std::string(info.param.family); });

}  // namespace
}  // namespace hattn
