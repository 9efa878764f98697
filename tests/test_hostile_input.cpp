// What a fuzz campaign of the loaders found (docs/reliability.md), each class with its test: no
// reader blocks or runs away, every message stays one short line, likely typos are refused, and an
// output file is replaced only through a fresh temporary.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "hattn/config.h"
#include "hattn/error.h"
#include "hattn/layer_case.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/layers/latent_attention.h"
#include "hattn/npy.h"
#include "hattn/safetensors.h"
#include "hattn/safetensors_writer.h"
#include "support/errors.h"
#include "support/random.h"
#include "support/temp_dir.h"

namespace hattn {
namespace {

namespace fs = std::filesystem;
using testing::error_message;
using testing::expect_contains;

std::string write_file(const std::string &path, const std::string &bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

// A safetensors file around `header` with no data.
std::string safetensors_bytes(const std::string &header) {
    std::string out;
    for (int i = 0; i < 8; i++) out += char((uint64_t(header.size()) >> (8 * i)) & 0xff);
    return out + header;
}

// Each reader of an input file, given `path`.
const std::vector<std::pair<const char *, std::function<void(const std::string &)>>> &readers() {
    static const std::vector<std::pair<const char *, std::function<void(const std::string &)>>> all{
        {"config", [](const std::string &p) { ConfigReader::from_file(p); }},
        {"npy", [](const std::string &p) { read_npy(p); }},
        {"safetensors", [](const std::string &p) { SafetensorsFile::open(p); }},
        {"index", [](const std::string &p) { Weights::open(p); }},
    };
    return all;
}

// A FIFO, a socket or a device blocks open() or never ends: each reader refuses it at once by name,
// and a link to nothing is refused as such rather than taken for a missing optional file.
TEST(HostileInput, AnInputThatIsNotARegularFileIsRefusedAtOnce) {
    testing::TempDir dir;
    const std::string fifo = dir.file("fifo.safetensors.index.json");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string socket_path = dir.file("s.sock");
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    ASSERT_LT(socket_path.size(), sizeof address.sun_path);
    std::copy(socket_path.begin(), socket_path.end(), address.sun_path);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
    const std::string zero = dir.file("zero.safetensors.index.json"), nothing = dir.file("nothing.npy");
    fs::create_symlink("/dev/zero", zero);
    fs::create_symlink(dir.file("absent"), nothing);
    for (const auto &[name, read] : readers()) {
        SCOPED_TRACE(name);
        expect_contains(error_message([&] { read(fifo); }), fifo + ": not a regular file (a FIFO)");
        expect_contains(error_message([&] { read(socket_path); }), socket_path + ": not a regular file (a socket)");
        expect_contains(error_message([&] { read(zero); }), zero + ": not a regular file (a device)");
        expect_contains(error_message([&] { read(nothing); }), nothing + ": cannot open: a link to a missing file");
    }
    ::close(fd);
    // A shard that is a FIFO, named by a well-formed index.
    const std::string index = write_file(dir.file("i.safetensors.index.json"), R"({"weight_map": {"w": "s"}})");
    ASSERT_EQ(::mkfifo(dir.file("s").c_str(), 0600), 0);
    expect_contains(error_message([&] { Weights::open(index); }), dir.file("s") + ": not a regular file (a FIFO)");
}

// std::regex recursed once per digit: a prefix of 30,000 digits overflowed the stack.
TEST(HostileInput, ALayerPrefixOfThirtyThousandDigitsIsRefused) {
    testing::TempDir dir;
    const std::string path = dir.file("w.safetensors");
    write_safetensors(path, {{"w", Tensor({1})}});
    const std::string digits(30000, '7');
    const std::string message = error_message([&] { Weights::open(path, "model.layers." + digits + ".self_attn.").layer_index(); });
    expect_contains(message, "layer index 77777777777777777777... is too large");
    EXPECT_LE(message.size(), 300u);
    EXPECT_EQ(Weights::open(path, "model.layers.2147.layers.3.").layer_index(), 2147);
    EXPECT_EQ(Weights::open(path, "xlayers.3.layers.5.").layer_index(), 5);
}

// nlohmann's ordered_json inserted keys in linear time: 80,000 keys took 10 s, and the 100 MiB cap
// allowed hours. A 10 MB header of 500,000 keys is read at once (well under a second here), and
// past 1,000,000 tensors a header is refused by the limit.
TEST(HostileInput, AHeaderOfManyKeysIsReadInLinearithmicTime) {
    testing::TempDir dir;
    std::string header = "{";
    for (int i = 0; i < 500000; i++) header += "\"tensor_" + std::to_string(1000000000 + i) + "\":0,";
    header.back() = '}';
    ASSERT_GT(header.size(), 10000000u);
    const std::string many = write_file(dir.file("many.safetensors"), safetensors_bytes(header));
    expect_contains(error_message([&] { SafetensorsFile::open(many); }), "tensor 'tensor_1000000000': entry is not an object");

    std::string over = "{";
    for (int i = 0; i <= 1000000; i++) over += "\"" + std::to_string(i) + "\":0,";
    over.back() = '}';
    const std::string too_many = write_file(dir.file("too_many.safetensors"), safetensors_bytes(over));
    EXPECT_EQ(error_message([&] { SafetensorsFile::open(too_many); }), too_many + ": more than 1000000 tensors, the limit");
}

// Strings from files were echoed raw: a newline split the message (a config could forge a second
// "hattn:" line), and a 100 MiB tensor name made a 100 MiB line.
TEST(HostileInput, StringsFromFilesAreEscapedAndCut) {
    testing::TempDir dir;
    std::string dict = "{'descr': '<f4\nhattn: forged', 'fortran_order': False, 'shape': (1,), }";
    dict.append(63 - (10 + dict.size()) % 64, ' ');
    dict += '\n';
    const std::string npy = write_file(dir.file("a.npy"), std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) +
                                                            char(dict.size() >> 8) + dict);
    expect_contains(error_message([&] { read_npy(npy); }), "dtype '<f4\\nhattn: forged' is not supported");
    const std::string config = write_file(dir.file("c.json"), R"({"model_type": "llama\nhattn: forged\u0001\u00e9"})");
    expect_contains(error_message([&] { CachedAttentionConfig::from(ConfigReader::from_file(config)); }),
                    "model_type 'llama\\nhattn: forged\\x01\xc3\xa9' is not supported");
    const std::string twice = write_file(dir.file("t.json"), R"({"a\nb": 1, "a\nb": 2})");
    expect_contains(error_message([&] { ConfigReader::from_file(twice); }), "key 'a\\nb' appears twice in one object");
    // A name of a million bytes, and bytes that are not UTF-8.
    const std::string long_name(1000000, 'n');
    const std::string named = write_file(dir.file("n.safetensors"), safetensors_bytes("{\"" + long_name + "\\n\": 1}"));
    const std::string message = error_message([&] { SafetensorsFile::open(named); });
    expect_contains(message, "tensor 'nnnn");
    expect_contains(message, "...': entry is not an object");
    EXPECT_LT(message.size(), 400u);
    EXPECT_EQ(Error("a\xff\xc3(b\r\tc").what(), std::string("a\\xFF\\xC3(b\\r\\tc"));
    EXPECT_EQ(std::string(Error(std::string(5000, 'e')).what()).size(), Error::max_message_bytes + 3);
}

// A typo of a seed key was ignored and the default used: 'roqe_base' gave output 0.42 off, 'mnde'
// 0.78. Within edit distance 2 of a known key, a key is refused; others pass (and Hugging Face
// configs, which carry many keys a layer does not read, are not checked).
TEST(HostileInput, LikelyTyposOfSeedKeysAreRefused) {
    const auto cached = [](const std::string &json) { CachedAttentionConfig::from(ConfigReader::parse(json, "c.json")); };
    const std::string seed = R"({"embedding_dimension": 8, "number_of_heads": 2, )";
    EXPECT_EQ(error_message([&] { cached(seed + R"("roqe_base": 10000})"); }),
              "c.json: unknown key 'roqe_base' (did you mean 'rope_base'?)");
    EXPECT_EQ(error_message([&] { cached(seed + R"("number_of_haeds": 4})"); }),
              "c.json: unknown key 'number_of_haeds' (did you mean 'number_of_heads'?)");
    EXPECT_NO_THROW(cached(seed + R"("flavour": "vanilla", "rope_base": 10000})"));
    EXPECT_NO_THROW(cached(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "roqe_theta": 1})"));
    const auto cca = [](const std::string &json, bool grouped) {
        LatentAttentionConfig::cca(ConfigReader::parse(json, "c.json"), grouped);
    };
    EXPECT_EQ(error_message([&] { cca(R"({"hidden_size": 64, "num_heads": 4, "mnde": "decoder"})", false); }),
              "c.json: unknown key 'mnde' (did you mean 'mode'?)");
    EXPECT_EQ(error_message([&] { cca(R"({"hidden_size": 64, "num_heads": 4, "ccgqa_qk_maen": true})", true); }),
              "c.json: unknown key 'ccgqa_qk_maen' (did you mean 'ccgqa_qk_mean'?)");
    EXPECT_NO_THROW(cca(R"({"hidden_size": 64, "num_heads": 4, "ccgqa_qk_mean": true, "architectures": []})", false));
}

// A case folder: a dangling mask.npy was taken as "no mask", and the run went unmasked; 'cross'
// without a context named neither the file nor the key; a typo of a case key was ignored.
TEST(HostileInput, ACaseFolderSaysWhatIsWrongWithIt) {
    testing::TempDir dir;
    const std::string config = R"("kind": "cached_attention", "batch": 1, "seq_len": 3,
        "config": {"embedding_dimension": 8, "number_of_heads": 2, "bias": false})";
    write_file(dir.file("config.json"), "{" + config + "}");
    const Tensor w = testing::random_tensor({8, 8}, 5);
    write_safetensors(dir.file("weights.safetensors"), {{"query_projection.weight", w}, {"key_projection.weight", w},
                                                        {"value_projection.weight", w}, {"output_projection.weight", w}});
    write_npy(dir.file("x.npy"), testing::random_tensor({1, 3, 8}, 6));
    EXPECT_NO_THROW(load_case_dir(dir.path().string()));
    fs::create_symlink(dir.file("gone.npy"), dir.file("mask.npy"));
    expect_contains(error_message([&] { load_case_dir(dir.path().string()); }),
                    dir.file("mask.npy") + ": cannot open: a link to a missing file");
    fs::remove(dir.file("mask.npy"));
    write_file(dir.file("config.json"), "{" + config + R"(, "cross": true})");
    EXPECT_EQ(error_message([&] { load_case_dir(dir.path().string()); }),
              dir.file("config.json") + ": key 'cross' is true, but no context input (context.npy) is given");
    write_file(dir.file("config.json"), "{" + config + R"(, "prefx": "model.layers.1."})");
    EXPECT_EQ(error_message([&] { load_case_dir(dir.path().string()); }),
              dir.file("config.json") + ": unknown key 'prefx' (did you mean 'prefix'?)");
}

// A NUL in a shard's name cut it short where the system read it: another file than the one named.
TEST(HostileInput, AShardNameWithANulIsRefused) {
    testing::TempDir dir;
    write_safetensors(dir.file("s.safetensors"), {{"w", Tensor({1})}});
    const std::string index = write_file(dir.file("i.safetensors.index.json"),
                                         R"({"weight_map": {"w": "s.safetensors\u0000.evil"}})");
    EXPECT_EQ(error_message([&] { Weights::open(index); }),
              index + ": weight_map entry 'w' names shard 's.safetensors\\x00.evil', which is not a file name "
                      "within the index's folder");
}

mode_t mode_of(const std::string &path) {
    struct stat st;
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return st.st_mode & 07777;
}

// The output went through the fixed name OUT.partial: a link there was followed (its target
// overwritten), an unrelated file of that name consumed, and a replaced file's mode lost.
TEST(HostileInput, AnOutputIsReplacedThroughAFreshTemporaryKeepingItsMode) {
    testing::TempDir dir;
    const std::string out = dir.file("out.npy"), victim = dir.file("victim"), stale = dir.file("other.npy.partial");
    write_file(victim, "precious");
    fs::create_symlink(victim, out + ".partial");
    write_file(stale, "unrelated");
    write_file(out, "old");
    ASSERT_EQ(::chmod(out.c_str(), 0600), 0);
    write_npy(out, Tensor({2}, {1.0f, 2.0f}));
    EXPECT_EQ(read_npy_f32(out).values(), (std::vector<float>{1.0f, 2.0f}));
    EXPECT_EQ(mode_of(out), mode_t(0600));
    write_npy(dir.file("other.npy"), Tensor({1}));
    std::ifstream precious(victim), unrelated(stale);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(precious), {}), "precious");
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(unrelated), {}), "unrelated");
    EXPECT_TRUE(fs::is_symlink(out + ".partial"));
    // A new file takes the umask's mode, as one the system created; no temporary is left behind.
    const mode_t mask = ::umask(027);
    write_safetensors(dir.file("new.safetensors"), {{"w", Tensor({1})}});
    ::umask(mask);
    EXPECT_EQ(mode_of(dir.file("new.safetensors")), mode_t(0640));
    int files = 0;
    for (const auto &entry : fs::directory_iterator(dir.path())) files += entry.path().filename().string()[0] == '.';
    EXPECT_EQ(files, 0);
}

}  // namespace
}  // namespace hattn
