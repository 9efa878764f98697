// Fuzzes the safetensors loaders. The input's first byte picks what the rest becomes:
//   even: a model.safetensors, opened with Weights::open (SafetensorsFile::open's header checks)
//         and every tensor read (the byte ranges, the F16/BF16 widening, the finiteness check);
//   odd:  a model.safetensors.index.json beside two valid shards (golden weights), opened with
//         Weights::open and every tensor it maps read.
// Bad input must be a hattn::Error; anything else (another exception, a crash, a leak) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "hattn/error.h"
#include "hattn/safetensors.h"
#include "support.h"

namespace {

void read_every_tensor(const hattn::Weights &weights) {
    for (const std::string &name : weights.names()) {
        // A tensor that fails (NaN, say) must not hide the next ones' checks.
        try {
            if (weights.has(name)) (void)weights.get(name);
            fuzz::note([&] { return "tensor " + name + ": read"; });
        } catch (const hattn::Error &e) {
            fuzz::note([&] { return std::string("refused: ") + e.what(); });
        }
    }
}

// Folders of their own, so that no index can name the single file that an earlier input left
// (an input's result must not depend on the ones before it): an index's shards must sit within its
// folder.
struct Folders {
    std::string single = fuzz::make_dir("single"), sharded = fuzz::make_dir("sharded");
};
const Folders &folders() {
    static const Folders made;
    return made;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    // Shards the seeds' indexes name: an F16 seed CCA layer's and a BF16 seed attention layer's.
    fuzz::copy_golden("cca/cca_decoder_small_f16/weights.safetensors",
                      folders().sharded + "/model-00001-of-00002.safetensors");
    fuzz::copy_golden("cached/mha_self_rope_bf16/weights.safetensors",
                      folders().sharded + "/model-00002-of-00002.safetensors");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const bool index = data[0] & 1;
    static const std::string single = folders().single + "/model.safetensors";
    static const std::string sharded = folders().sharded + "/model.safetensors.index.json";
    const std::string &path = index ? sharded : single;
    fuzz::write_file(path, data + 1, size - 1);
    try {
        read_every_tensor(hattn::Weights::open(path));
    } catch (const hattn::Error &e) {
        fuzz::note([&] { return std::string("refused: ") + e.what(); });
    }
    return 0;
}
