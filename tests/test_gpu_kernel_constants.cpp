// No CUDA kernel may hold an infinity or a NaN: Halide's fast-math codegen assumes none, so a
// kernel that starts a maximum at -inf (as rfactor does by default) works only by luck. The PTX
// that the default build writes into each CUDA kernel's .stmt is scanned for the bit patterns.
// The one +inf allowed is Halide's own exp, which selects it for arguments past float's range
// (every exp the kernels take is of an argument at most 0, or clamped).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace hattn {
namespace {

// The lines of `ptx` that hold -inf, a NaN, or a +inf other than exp's overflow select. PTX writes
// a float constant as 0f and its 8 hex digits, or moves its bits as a 32-bit integer. Halide's exp
// selects +inf where the argument's power of two reaches 128: `setp.lt.s32 %pN, %rM, 128;` then
// `selp.f32 %f, %f, 0f7F800000, %pN;`, which is allowed, with a predicate set that way only.
std::vector<std::string> offending_lines(const std::string &ptx) {
    static const std::regex forbidden(
        R"(0f(FF800000|7FC00000|FFC00000)|mov\.[bu]32\s+%r[0-9]+, (-8388608|4286578688|2143289344|-4194304|2139095040)\b)",
        std::regex::icase);
    static const std::regex pos_inf(R"(0f7F800000)", std::regex::icase);
    static const std::regex exponent_below_128(R"(^\s*setp\.lt\.s32\s+(%p[0-9]+), %r[0-9]+, 128;)");
    static const std::regex exp_overflow(R"(^\s*selp\.f32\s+%f[0-9]+, %f[0-9]+, 0f7F800000, (%p[0-9]+);)");
    std::set<std::string> exponent_checks;
    std::vector<std::string> found;
    std::istringstream lines(ptx);
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (std::regex_search(line, m, exponent_below_128)) exponent_checks.insert(m[1]);
        const bool allowed_inf = std::regex_search(line, m, exp_overflow) && exponent_checks.count(m[1]);
        const bool bad_inf = std::regex_search(line, pos_inf) && !allowed_inf;
        if (bad_inf || std::regex_search(line, forbidden)) found.push_back(line);
    }
    return found;
}

TEST(GpuKernelConstants, TheScanFindsInfinitiesAndNaNs) {
    EXPECT_EQ(offending_lines("\tmov.u32 \t%r552, -8388608;\n").size(), 1u);  // rfactor's -inf, as it was
    EXPECT_EQ(offending_lines("\tmov.f32 \t%f3, 0fFF800000;\n").size(), 1u);
    EXPECT_EQ(offending_lines("\tadd.f32 \t%f4, %f3, 0f7FC00000;\n").size(), 1u);
    EXPECT_EQ(offending_lines("\tmax.f32 \t%f5, %f4, 0f7F800000;\n").size(), 1u);
    EXPECT_EQ(offending_lines("\tselp.f32 \t%f80, %f79, 0f7F800000, %p29;\n").size(), 1u);  // no exponent check
    EXPECT_TRUE(offending_lines("\tsetp.lt.s32 \t%p29, %r134, 128;\n"
                                "\tselp.f32 \t%f80, %f79, 0f7F800000, %p29;\n"
                                "\tmov.u32 \t%r124, -246811958;\n")  // exp's overflow; the masked score
                    .empty());
}

TEST(GpuKernelConstants, NoKernelHoldsAnInfinityOrNaN) {
    if (!std::filesystem::is_directory(HATTN_KERNEL_DIR)) GTEST_SKIP() << HATTN_KERNEL_DIR << " is missing";
    int scanned = 0;
    for (const auto &entry : std::filesystem::directory_iterator(HATTN_KERNEL_DIR)) {
        const std::string name = entry.path().filename().string();
        if (entry.path().extension() != ".stmt" || name.find("_cuda") == std::string::npos) continue;
        std::ifstream file(entry.path(), std::ios::binary);
        std::stringstream text;
        text << file.rdbuf();
        const std::vector<std::string> found = offending_lines(text.str());
        EXPECT_TRUE(found.empty()) << name << ": " << found.size() << " lines, the first: " << (found.empty() ? std::string() : found.front());
        scanned++;
    }
    if (scanned == 0) GTEST_SKIP() << "this build has no CUDA kernels";
}

}  // namespace
}  // namespace hattn
