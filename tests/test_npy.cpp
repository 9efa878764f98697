#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "hattn/error.h"
#include "hattn/npy.h"
#include "support/errors.h"
#include "support/temp_dir.h"

namespace {

using hattn::NpyArray;
using hattn::Shape;
using hattn::Tensor;

// Each test writes its files into a fresh temporary directory.
class NpyTest : public ::testing::Test {
protected:
    std::string path(const std::string &name) const { return dir_.file(name); }

    std::string write(const std::string &name, const std::string &bytes) const {
        std::ofstream(path(name), std::ios::binary) << bytes;
        return path(name);
    }

    hattn::testing::TempDir dir_;
};

// A version 1.0 .npy file around `dict`, padded the way NumPy pads it.
std::string npy_blob(std::string dict, const std::string &data) {
    dict.append(63 - (10 + dict.size()) % 64, ' ');
    dict += '\n';
    return std::string("\x93NUMPY\x01\x00", 8) + char(dict.size() & 0xff) + char(dict.size() >> 8) +
           dict + data;
}

template <typename T>
std::string raw_bytes(const std::vector<T> &values) {
    std::string out(values.size() * sizeof(T), '\0');
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

std::string read_bytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

using hattn::testing::error_message;
using hattn::testing::expect_contains_all;

TEST_F(NpyTest, RoundTripsF32) {
    const Tensor t({2, 3}, {1.5f, -2.0f, 0.0f, 1e-38f, 3.0f, -7.25f});
    const std::string file = path("t.npy");
    hattn::write_npy(file, t);
    const std::string bytes = read_bytes(file);
    ASSERT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const size_t header_size = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
    EXPECT_EQ((10 + header_size) % 64, 0u);
    EXPECT_EQ(bytes[10 + header_size - 1], '\n');
    EXPECT_NE(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
              std::string::npos);
    EXPECT_EQ(bytes.size(), 10 + header_size + 6 * 4);

    const Tensor back = hattn::read_npy_f32(file);
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(back.values(), t.values());
}

TEST_F(NpyTest, RoundTripsRankZeroAndOne) {
    hattn::write_npy(path("scalar.npy"), Tensor(Shape{}, {4.0f}));
    EXPECT_NE(read_bytes(path("scalar.npy")).find("'shape': ()"), std::string::npos);
    EXPECT_EQ(hattn::read_npy_f32(path("scalar.npy")).values(), std::vector<float>{4.0f});

    hattn::write_npy(path("vector.npy"), Tensor({3}, {1, 2, 3}));
    EXPECT_NE(read_bytes(path("vector.npy")).find("'shape': (3,)"), std::string::npos);
    EXPECT_EQ(hattn::read_npy_f32(path("vector.npy")).shape(), Shape{3});

    hattn::write_npy(path("empty.npy"), Tensor({0, 4}));
    EXPECT_EQ(hattn::read_npy_f32(path("empty.npy")).shape(), (Shape{0, 4}));
}

TEST_F(NpyTest, ReadsBool) {
    const std::string file =
        write("b.npy", npy_blob("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }",
                                std::string("\x01\x00\x00\x01", 4)));
    const NpyArray array = hattn::read_npy(file);
    EXPECT_EQ(array.type, NpyArray::Type::Bool);
    EXPECT_EQ(array.shape, (Shape{2, 2}));
    EXPECT_EQ(array.boolean, (std::vector<uint8_t>{1, 0, 0, 1}));
    expect_contains_all(error_message([&] { hattn::read_npy_f32(file); }),
                    {file, "dtype '|b1' is not float32"});

    hattn::write_npy_bool(path("w.npy"), {3}, {0, 1, 1});
    EXPECT_EQ(hattn::read_npy(path("w.npy")).boolean, (std::vector<uint8_t>{0, 1, 1}));
}

TEST_F(NpyTest, ReadsIntegers) {
    const std::string i4 =
        write("i4.npy", npy_blob("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
                                 raw_bytes<int32_t>({-1, 7, 2147483647})));
    const NpyArray a = hattn::read_npy(i4);
    EXPECT_EQ(a.type, NpyArray::Type::I32);
    EXPECT_EQ(a.integers, (std::vector<int64_t>{-1, 7, 2147483647}));

    // Keys in another order, Python 2 "L" suffixes, and no trailing comma are all accepted.
    const std::string i8 =
        write("i8.npy", npy_blob("{'shape': (2L, 1L), 'fortran_order': False, 'descr': '<i8'}",
                                 raw_bytes<int64_t>({int64_t(1) << 40, -3})));
    const NpyArray b = hattn::read_npy(i8);
    EXPECT_EQ(b.type, NpyArray::Type::I64);
    EXPECT_EQ(b.shape, (Shape{2, 1}));
    EXPECT_EQ(b.integers, (std::vector<int64_t>{int64_t(1) << 40, -3}));
}

TEST_F(NpyTest, RejectsBadFiles) {
    const std::string f32_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    const std::string two_floats = raw_bytes<float>({1, 2});
    struct Case {
        std::string bytes;
        std::vector<std::string> expected;
    };
    const std::string good = npy_blob(f32_dict, two_floats);
    std::string version_4 = good;
    version_4[6] = 4;
    const std::vector<Case> cases = {
        {"PK\x03\x04 not numpy", {"bad magic"}},
        {good.substr(0, 9), {"truncated header"}},
        {good.substr(0, 40), {"header length 118 runs past the end of the file (40 bytes)"}},
        {version_4, {"unsupported npy version 4.0"}},
        {good.substr(0, good.size() - 3), {"data is truncated", "needs 8 bytes, file has 5"}},
        {good + "xyz", {"3 trailing bytes"}},
        {npy_blob("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", two_floats),
         {"fortran_order True is not supported"}},
        {npy_blob("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", two_floats), {"big-endian dtype '>f4'"}},
        {npy_blob("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", two_floats),
         {"dtype '<f8' is not supported"}},
        {npy_blob("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", two_floats),
         {"malformed header dict", "shape"}},
        {npy_blob("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", two_floats),
         {"malformed header dict", "expected '('"}},
        {npy_blob("{'descr': '<f4', 'fortran_order': False}", two_floats),
         {"malformed header dict", "missing 'shape'"}},
        {npy_blob("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two_floats),
         {"malformed header dict", "unexpected key 'x'"}},
        {npy_blob("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", two_floats),
         {"malformed header dict", "expected '}'"}},
        {npy_blob("{'descr': '<f4', 'fortran_order': False, "
                  "'shape': (4611686018427387904, 4), }",
                  two_floats),
         {"overflows"}},
        {npy_blob("{'descr': '<f4', 'fortran_order': False, "
                  "'shape': (0, 4611686018427387904, 4), }",
                  ""),
         {"overflows"}},
        {npy_blob(std::string("{'descr':\0'<f4', 'fortran_order': False, 'shape': (2,), }"), two_floats),
         {"malformed header dict"}},
    };
    for (size_t i = 0; i < cases.size(); i++) {
        const std::string file = write("bad" + std::to_string(i) + ".npy", cases[i].bytes);
        std::vector<std::string> expected = cases[i].expected;
        expected.push_back(file);
        expect_contains_all(error_message([&] { hattn::read_npy(file); }), expected);
    }
    expect_contains_all(error_message([&] { hattn::read_npy(path("absent.npy")); }),
                    {path("absent.npy"), "cannot open"});
    std::filesystem::create_directories(path("folder.npy"));
    expect_contains_all(error_message([&] { hattn::read_npy(path("folder.npy")); }), {path("folder.npy"), "is a directory"});
}

// A file is replaced only once the new array is written whole; a failed write names its cause.
TEST_F(NpyTest, WritesReplaceWholeOrSayWhy) {
    const std::string file = path("out.npy");
    hattn::write_npy(file, hattn::Tensor({2}, {1, 2}));
    hattn::write_npy(file, hattn::Tensor({3}, {4, 5, 6}));
    EXPECT_EQ(hattn::read_npy_f32(file).values(), std::vector<float>({4, 5, 6}));
    EXPECT_FALSE(std::filesystem::exists(file + ".partial"));
    if (std::filesystem::exists("/dev/full")) {
        try {
            hattn::write_npy("/dev/full", hattn::Tensor({1}));  // fails only as the file is closed
            ADD_FAILURE() << "writing to /dev/full succeeded";
        } catch (const hattn::Error &e) {
            expect_contains_all(e.what(), {"/dev/full", "write failed", std::strerror(ENOSPC)});
        }
    }
    // A default Tensor has shape [] (one value) and holds none: its file would not read back.
    EXPECT_EQ(error_message([&] { hattn::write_npy(file, hattn::Tensor()); }),
              file + ": the tensor holds no values (a default-constructed Tensor)");
    EXPECT_EQ(error_message([&] { hattn::write_npy("", hattn::Tensor({1})); }), "an output file's path is empty");
    EXPECT_EQ(hattn::read_npy_f32(file).values(), std::vector<float>({4, 5, 6}));
}

}  // namespace
