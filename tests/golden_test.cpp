// The golden driver: every case folder below the golden root (spec/cases.md) becomes its own test.
// A case whose kind is not built yet is skipped, naming the kind; finding no case at all fails.
#include "golden_test.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "hattn/device.h"
#include "hattn/error.h"
#include "hattn/layer_case.h"
#include "hattn/npy.h"
#include "support/device.h"

namespace hattn::testing {

namespace fs = std::filesystem;

namespace {

std::string golden_root() {
    if (const char *env = std::getenv("HATTN_GOLDEN_DIR"); env && *env) return env;
    return HATTN_DEFAULT_GOLDEN_DIR;
}

// Folders root/*/* that hold a config.json, sorted so test order is stable.
std::vector<fs::path> find_cases(const fs::path &root) {
    std::vector<fs::path> cases;
    std::error_code ec;
    for (const auto &group : fs::directory_iterator(root, ec)) {
        if (!group.is_directory()) continue;
        for (const auto &c : fs::directory_iterator(group.path(), ec)) {
            if (fs::is_regular_file(c.path() / "config.json")) cases.push_back(c.path());
        }
    }
    std::sort(cases.begin(), cases.end());
    return cases;
}

double relative_l2(const Tensor &out, const Tensor &expected) {
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < expected.size(); i++) {
        const double o = out.data()[i], e = expected.data()[i];
        if (!std::isfinite(o)) return INFINITY;
        diff += (o - e) * (o - e);
        norm += e * e;
    }
    return std::sqrt(diff / std::max(norm, 1e-300));
}

void expect_matches(const LayerCase &c, const Tensor &y, std::optional<int64_t> prefill) {
    SCOPED_TRACE(prefill ? "prefill " + std::to_string(*prefill) + " + decode" : "forward");
    const CaseRun run = run_case(c, prefill);
    // A run in other storage types than the case names would pass its tolerance and show nothing.
    EXPECT_EQ(run.report.dtype, c.dtype);
    EXPECT_EQ(run.report.kv_dtype, c.kv_dtype);
    ASSERT_EQ(run.y.shape(), y.shape());
    EXPECT_LE(relative_l2(run.y, y), c.tolerance);
}

class GoldenCase : public ::testing::Test {
public:
    GoldenCase(fs::path dir, Device device) : dir_(std::move(dir)), device_(device) {}

    void TestBody() override {
        HATTN_SKIP_WITHOUT_DEVICE(device_);
        const OnDevice on(device_);
        const LayerCase c = load_case_dir(dir_.string());
        if (!c.kind->built) GTEST_SKIP() << "kind " << c.kind->name << " is not built yet";
        // A built kind may still lack an optional feature or storage type the case uses (the
        // runtime says so).
        try {
            run_case(c, std::nullopt);
        } catch (const Error &e) {
            const std::string why = e.what();
            if (why.find("not built yet") != std::string::npos || why.find("not supported yet") != std::string::npos) {
                GTEST_SKIP() << why;
            }
        }
        const Tensor y = read_npy_f32((dir_ / "y.npy").string());
        expect_matches(c, y, std::nullopt);
        if (!c.causal()) return;
        for (int64_t p : {int64_t(0), int64_t(1), c.seq_len / 2}) expect_matches(c, y, p);
    }

private:
    fs::path dir_;
    Device device_;
};

}  // namespace

void register_golden_cases() {
    const fs::path root = golden_root();
    const std::vector<fs::path> cases = find_cases(root);
    if (cases.empty()) {
        ::testing::RegisterTest("Golden", "CasesFound", nullptr, nullptr, __FILE__, __LINE__,
                                [root]() -> ::testing::Test * {
                                    struct NoCases : ::testing::Test {
                                        fs::path root;
                                        void TestBody() override {
                                            FAIL() << "no golden case (*/*/config.json) under "
                                                   << root << "; set HATTN_GOLDEN_DIR";
                                        }
                                    };
                                    auto *t = new NoCases;
                                    t->root = root;
                                    return t;
                                });
        return;
    }
    // Every case on the CPU, and again on each GPU API (skipped where that device is unavailable).
    const std::pair<const char *, Device> suites[] = {
        {"Golden", Device::CPU}, {"GoldenOpenCL", Device::OpenCL}, {"GoldenCUDA", Device::CUDA}};
    for (const auto &[suite, device] : suites) {
#if !defined(__x86_64__)
        if (device != Device::CPU) continue;  // GPU variants are built for x86-64 hosts only
#endif
        for (const fs::path &dir : cases) {
            const std::string name = dir.parent_path().filename().string() + "_" + dir.filename().string();
            const Device d = device;
            ::testing::RegisterTest(suite, name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                                    [dir, d]() -> ::testing::Test * { return new GoldenCase(dir, d); });
        }
    }
}

}  // namespace hattn::testing
