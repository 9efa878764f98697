// Fuzzes the case-folder reader: each input becomes the config.json of a fixed folder that also
// holds a valid weights.safetensors and x.npy (golden cca/cca_encoder_small: batch 1, seq_len 9,
// hidden 64), read with load_case_dir. The layer never runs; LayerCase::causal() is called, as
// `hattn run --prefill` does before running, since it reads the layer's config (and the weight
// prefix's layer index) the way the layer will.
// Bad input must be a hattn::Error; anything else (another exception, a crash, a leak) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "hattn/error.h"
#include "hattn/layer_case.h"
#include "support.h"

namespace {

const std::string &case_dir() {
    static const std::string dir = [] {
        const std::string d = fuzz::make_dir("case");
        fuzz::copy_golden("cca/cca_encoder_small/weights.safetensors", d + "/weights.safetensors");
        fuzz::copy_golden("cca/cca_encoder_small/x.npy", d + "/x.npy");
        return d;
    }();
    return dir;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    (void)case_dir();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz::write_file(case_dir() + "/config.json", data, size);
    try {
        const hattn::LayerCase c = hattn::load_case_dir(case_dir());
        const bool causal = c.causal();
        fuzz::note([&] { return std::string("loaded; causal: ") + (causal ? "yes" : "no"); });
    } catch (const hattn::Error &e) {
        fuzz::note([&] { return std::string("refused: ") + e.what(); });
    }
    return 0;
}
