// Fuzzes the JSON config readers: each input is parsed with ConfigReader::parse, and the reader
// goes through every layer config reader in turn (the seed's and Hugging Face's cached attention,
// at several layer indexes, CCA and CCGQA, ZAYA1, GLM DSA), each followed by validate() as a
// layer's constructor would. The readers run independently: one refusing the config does not
// keep the others from it.
// Bad input must be a hattn::Error; anything else (another exception, a crash, a leak) is a finding.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hattn/config.h"
#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/layers/dsa_attention.h"
#include "hattn/layers/latent_attention.h"
#include "support.h"

namespace {

template <typename Read>
void attempt(const char *what, Read &&read) {
    try {
        read();
        fuzz::note([&] { return std::string(what) + ": read"; });
    } catch (const hattn::Error &e) {
        fuzz::note([&] { return std::string(what) + ": refused: " + e.what(); });
    }
}

// The layer indexes to read the config at: the first four, and those the config's own period and
// layer count point at (a layer index can be up to 9 digits, as Weights::layer_index reads one).
std::vector<int64_t> layers_of(const hattn::ConfigReader &config, int64_t period) {
    std::vector<int64_t> layers = {0, 1, 2, 3};
    if (period > 1 && period <= 999999999) layers.insert(layers.end(), {period - 1, 2 * period - 1});
    std::optional<int64_t> count;
    attempt("num_hidden_layers", [&] { count = hattn::text_model_config(config).get_optional_int("num_hidden_layers"); });
    if (count && *count > 0) layers.push_back(*count - 1);
    std::vector<int64_t> kept;
    for (int64_t layer : layers) {
        if (layer >= 0 && layer <= 999999999) kept.push_back(layer);
    }
    return kept;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::optional<hattn::ConfigReader> parsed;
    try {
        parsed = hattn::ConfigReader::parse(std::string(reinterpret_cast<const char *>(data), size), "config.json");
    } catch (const hattn::Error &e) {
        fuzz::note([&] { return std::string("parse: refused: ") + e.what(); });
        return 0;
    }
    const hattn::ConfigReader &config = *parsed;

    attempt("CachedAttentionConfig::from", [&] { hattn::CachedAttentionConfig::from(config).validate(); });
    attempt("unused_keys", [&] { (void)hattn::CachedAttentionConfig::unused_keys(config); });
    int64_t period = 1;
    attempt("layer_period", [&] { period = hattn::CachedAttentionConfig::layer_period(config); });
    for (int64_t layer : layers_of(config, period)) {
        attempt("CachedAttentionConfig::from(config, layer)", [&] {
            fuzz::note([&] { return "layer " + std::to_string(layer) + ":"; });
            hattn::CachedAttentionConfig::from(config, layer).validate();
        });
    }
    attempt("LatentAttentionConfig::cca", [&] { hattn::LatentAttentionConfig::cca(config, false).validate(); });
    attempt("LatentAttentionConfig::cca(grouped)", [&] { hattn::LatentAttentionConfig::cca(config, true).validate(); });
    attempt("LatentAttentionConfig::zaya", [&] { hattn::LatentAttentionConfig::zaya(config).validate(); });
    attempt("DsaConfig::from", [&] { hattn::DsaConfig::from(config).validate(); });
    return 0;
}
