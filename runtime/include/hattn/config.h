// Reading JSON configuration (model config.json, checkpoint indexes) with errors that name the file
// and the key at fault. The JSON library stays inside hattn: an application needs none.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hattn {

// Typed access to the keys of one JSON object. Errors name the source and the key, e.g.
// "config.json: key 'num_heads' must be an integer, got \"abc\"".
//
// A key whose value is null counts as absent (configs write null for "unset"): has() is false,
// getters with a default return it, and getters without one throw "missing key".
class ConfigReader {
public:
    // The JSON object in the file at `path`. Throws Error naming the file when it is missing or
    // unreadable, is not valid JSON (with the byte position), or is not an object.
    static ConfigReader from_file(const std::string &path);
    // The JSON object in `text` (a config written in code); `source` labels errors.
    static ConfigReader parse(const std::string &text, const std::string &source);

    // What errors name: the file, and the path of keys to a nested object ("config.json
    // (rope_parameters.hybrid)").
    std::string source() const;

    bool has(const std::string &key) const;
    // Throws Error naming a key of this object that is not one of `known` but within edit distance
    // 2 of one (a likely typo: "unknown key 'roqe_base' (did you mean 'rope_base'?)"); other keys
    // pass, as a config may carry a model's other settings.
    void refuse_likely_typos(const std::vector<std::string> &known) const;
    // Whether `key` is there with the value null, which some config classes read as "off" where a
    // missing key means their default (Gemma 2's attn_logit_softcapping).
    bool states_null(const std::string &key) const;
    // The object under `key` (rope_parameters, say) as a reader of its own; throws unless the key
    // holds an object.
    ConfigReader object(const std::string &key) const;

    // Integers accept any JSON number with an exact integer value in the int32 range (8 and 8.0;
    // not 8.5, not 2^31): sizes must fit the kernels' 32-bit extents.
    int64_t get_int(const std::string &key) const;
    int64_t get_int(const std::string &key, int64_t fallback) const;
    std::optional<int64_t> get_optional_int(const std::string &key) const;

    double get_number(const std::string &key) const;
    double get_number(const std::string &key, double fallback) const;
    std::optional<double> get_optional_number(const std::string &key) const;

    bool get_bool(const std::string &key) const;
    bool get_bool(const std::string &key, bool fallback) const;
    // A switch stated as a bool or as a number, true where non-zero (Llama 4 Scout's
    // attn_temperature_tuning: 4).
    bool get_flag(const std::string &key, bool fallback) const;

    std::string get_string(const std::string &key) const;
    std::string get_string(const std::string &key, const std::string &fallback) const;

    // A list of strings (layer_types), or nothing where the key is absent.
    std::optional<std::vector<std::string>> get_optional_string_list(const std::string &key) const;
    // A list of integers (no_rope_layers), each as get_int reads one, or nothing where absent.
    std::optional<std::vector<int64_t>> get_optional_int_list(const std::string &key) const;
    // A list of numbers (longrope's short_factor); throws where absent.
    std::vector<double> get_number_list(const std::string &key) const;

    struct Json;  // the parsed object (runtime/src/config.cpp)

private:
    ConfigReader(std::shared_ptr<const Json> object, std::string file, std::string path);
    const Json &json() const { return *object_; }

    std::shared_ptr<const Json> object_;  // immutable, so copies of a reader share it
    std::string file_;
    std::string path_;  // keys from the file's top level to this object, dot-separated
};

// A multimodal Hugging Face config.json (Gemma 3's) keeps its text model's keys in text_config:
// that object where the config states no hidden size of its own, else the config itself.
ConfigReader text_model_config(const ConfigReader &config);

}  // namespace hattn
