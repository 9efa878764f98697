// The layer kinds a configuration may name (spec/attention.md), and which of them this build runs.
#pragma once

#include <string>

namespace hattn {

struct KindInfo {
    const char *name;        // the `kind` of a golden case and of `hattn run --kind`
    const char *hidden_key;  // the config key holding the hidden size E
    // Where a config lacks hidden_key, the key of the model's own config.json that holds E instead
    // (cached_attention reads a Hugging Face Llama-family config), or nullptr.
    const char *checkpoint_hidden_key;
    bool built;              // false until the layer's kernels and module exist
    bool mask_and_context;   // takes an attention mask and a cross-attention context
};

// nullptr when `name` is not a kind hattn knows.
const KindInfo *find_kind(const std::string &name);

// "cached_attention, cca, ..." for error messages.
std::string known_kind_names();

}  // namespace hattn
