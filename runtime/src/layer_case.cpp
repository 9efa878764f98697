#include "hattn/layer_case.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "finite_input.h"
#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/layers/dsa_attention.h"
#include "hattn/layers/latent_attention.h"
#include "quoted.h"

namespace hattn {

namespace fs = std::filesystem;

namespace {

const KindInfo &require_kind(const std::string &name, const std::string &source) {
    const KindInfo *kind = find_kind(name);
    require(kind != nullptr, source + ": unknown kind " + detail::quoted(name) + " (known: " +
                                 known_kind_names() + ")");
    return *kind;
}

int64_t require_positive(const ConfigReader &reader, const std::string &key) {
    const int64_t value = reader.get_int(key);
    require(value > 0, reader.source() + ": key '" + key + "' must be positive, got " +
                           std::to_string(value));
    return value;
}

void require_shape(const std::string &path, const Shape &actual, const Shape &expected,
                   const std::string &meaning) {
    require(actual == expected, path + ": shape " + shape_to_string(actual) + ", expected " +
                                    shape_to_string(expected) + " (" + meaning + ")");
}

// Reads the tensors of a case once the config is known, checking every shape against it.
LayerCase load_inputs(const KindInfo &kind, ConfigReader config, int64_t batch, int64_t seq_len,
                      bool cross, double tolerance, const LayerFiles &files) {
    const bool checkpoint_keys =
        kind.checkpoint_hidden_key && !config.has(kind.hidden_key) && config.has(kind.checkpoint_hidden_key);
    require(!kind.checkpoint_hidden_key || checkpoint_keys || config.has(kind.hidden_key), [&] {
        return config.source() + ": missing key '" + kind.hidden_key + "' (a model's config.json: '" +
               kind.checkpoint_hidden_key + "')";
    });
    const int64_t hidden = require_positive(config, checkpoint_keys ? kind.checkpoint_hidden_key : kind.hidden_key);
    Weights weights = Weights::open(files.weights, files.weight_prefix);
    Tensor x = read_npy_f32(files.input);
    if (batch == 0) {  // files named one by one: batch and sequence come from x itself
        require(x.rank() == 3 && x.dim(0) > 0 && x.dim(1) > 0,
                files.input + ": shape " + shape_to_string(x.shape()) +
                    ", expected [batch, seq_len, " + std::to_string(hidden) + "]");
        batch = x.dim(0);
        seq_len = x.dim(1);
    }
    require_shape(files.input, x.shape(), {batch, seq_len, hidden}, "[batch, seq_len, E]");
    detail::require_finite(files.input, x);

    if (!kind.mask_and_context) {  // silently ignoring them would give the user a wrong result
        const std::string no = std::string(": kind ") + kind.name + " takes no ";
        require(!cross || !files.context.empty(), files.config + no + "cross-attention ('cross': true)");
        require(files.context.empty(), files.context + no + "context (cross-attention is cached_attention's)");
        require(files.mask.empty(), files.mask + no + "mask (masks are cached_attention's)");
    }
    require(cross == !files.context.empty(),
            cross ? files.config + ": key 'cross' is true, but no context input (context.npy) is given"
                  : files.context + ": a context input is only valid for cross-attention");
    std::optional<Tensor> context;
    int64_t context_len = seq_len;
    if (cross) {
        context = read_npy_f32(files.context);
        require(context->rank() == 3 && context->dim(0) == batch && context->dim(1) > 0 &&
                    context->dim(2) == hidden,
                files.context + ": shape " + shape_to_string(context->shape()) +
                    ", expected [" + std::to_string(batch) + ", Sk, " + std::to_string(hidden) +
                    "]");
        context_len = context->dim(1);
        detail::require_finite(files.context, *context);
    }
    std::optional<NpyArray> mask;
    if (!files.mask.empty()) {
        mask = read_npy(files.mask);
        require(mask->type == NpyArray::Type::Bool,
                files.mask + ": dtype " + npy_type_name(mask->type) + ", expected bool (|b1)");
        require_shape(files.mask, mask->shape, {batch, 1, seq_len, context_len},
                      "[batch, 1, seq_len, Sk], True = masked");
    }
    return LayerCase{&kind,  std::move(config), batch, seq_len, hidden, cross, tolerance,
                     std::move(weights), std::move(x), std::move(context), std::move(mask)};
}

// Present when anything has that name, a link to nothing too: it is then read, and refused
// there, rather than taken for absent.
std::string optional_file(const fs::path &path) {
    std::error_code ec;
    return fs::exists(fs::symlink_status(path, ec)) ? path.string() : std::string();
}

}  // namespace

bool LayerCase::causal() const {
    const std::string name = kind->name;
    // The layer's own reading of its mode, so that a mode it refuses is named as such.
    if (name == "cca" || name == "ccgqa") return LatentAttentionConfig::cca(config, name == "ccgqa").causal;
    // A bidirectional layer (EmbeddingGemma's) sees later keys: it has no prefill/decode split.
    if (name == "cached_attention") return !cross && CachedAttentionConfig::from(config, weights).causal;
    return true;  // zaya_cca and glm_dsa are causal
}

LayerCase load_case_dir(const std::string &dir) {
    const fs::path root(dir);
    require(fs::is_directory(root), dir + ": not a directory");
    const std::string config_path = (root / "config.json").string();
    const ConfigReader top = ConfigReader::from_file(config_path);
    top.refuse_likely_typos({"kind", "config", "batch", "seq_len", "cross", "tolerance", "prefix", "dtype", "kv_dtype"});
    const KindInfo &kind = require_kind(top.get_string("kind"), config_path);
    require(top.has("config"), config_path + ": key 'config' must be an object holding the layer's keys");
    const int64_t batch = require_positive(top, "batch");
    const int64_t seq_len = require_positive(top, "seq_len");
    const bool cross = top.get_bool("cross", false);
    const double tolerance = top.get_number("tolerance", 1e-4);
    require(tolerance > 0, config_path + ": key 'tolerance' must be positive");

    LayerFiles files;
    files.kind = kind.name;
    files.config = config_path;
    files.weights = (root / "weights.safetensors").string();
    files.input = (root / "x.npy").string();
    files.context = optional_file(root / "context.npy");
    files.mask = optional_file(root / "mask.npy");
    files.weight_prefix = top.get_string("prefix", "");
    LayerCase c = load_inputs(kind, top.object("config"), batch, seq_len, cross, tolerance, files);
    const auto storage_type = [&](const char *key, DType fallback) {
        if (!top.has(key)) return fallback;
        const std::string name = top.get_string(key);
        const std::optional<DType> dtype = type_named(name);
        require(dtype.has_value(), [&] {
            return config_path + ": key '" + key + "' must be one of " + type_names() + ", got " + detail::quoted(name);
        });
        return *dtype;
    };
    const DType dtype = storage_type("dtype", DType::F32);
    set_storage_types(c, dtype, storage_type("kv_dtype", dtype), config_path + ": key 'dtype'");
    return c;
}

void set_storage_types(LayerCase &c, DType dtype, DType kv_dtype, const std::string &source) {
    require(dtype != DType::Int8, [&] { return source + ": int8 is a cache's storage type only (kv_dtype)"; });
    c.dtype = dtype;
    c.kv_dtype = kv_dtype;
}

LayerCase load_case_files(const LayerFiles &files) {
    const KindInfo &kind = require_kind(files.kind, "--kind");
    ConfigReader config = ConfigReader::from_file(files.config);
    if (kind.checkpoint_hidden_key) config = text_model_config(config);  // a multimodal model's text part
    // A cross-attention call is one that brings a context.
    const bool cross = !files.context.empty();
    return load_inputs(kind, std::move(config), 0, 0, cross, 1e-4, files);
}

void validate_prefill(const LayerCase &c, int64_t prefill) {
    require(c.causal(), [&] {
        const char *why = c.cross                                          ? " with cross-attention"
                          : std::string(c.kind->name) == "cached_attention" ? " with bidirectional attention"
                                                                            : " in encoder mode";
        return std::string("--prefill: kind ") + c.kind->name + why +
               " is not causal (a query sees later keys), so it has no prefill/decode path";
    });
    require(prefill >= 0 && prefill <= c.seq_len,
            "--prefill " + std::to_string(prefill) + " is outside 0.." + std::to_string(c.seq_len) +
                " (the sequence length)");
}

namespace {

// Writes tokens [begin, begin + part.dim(1)) of out [B, S, E].
void place_tokens(Tensor &out, const Tensor &part, int64_t begin) {
    const int64_t S = out.dim(1), n = part.dim(1), E = out.dim(2);
    for (int64_t b = 0; b < out.dim(0); b++) {
        std::copy_n(part.data() + b * n * E, n * E, out.data() + (b * S + begin) * E);
    }
}

// Rows [begin, end) of every sequence's [1, S, Sk] boolean mask, as a [B, 1, end - begin, Sk] mask.
std::vector<uint8_t> mask_rows(const NpyArray &mask, int64_t begin, int64_t end) {
    const int64_t B = mask.shape[0], S = mask.shape[2], Sk = mask.shape[3];
    std::vector<uint8_t> rows;
    rows.reserve(B * (end - begin) * Sk);
    for (int64_t b = 0; b < B; b++) {
        const uint8_t *first = mask.boolean.data() + (b * S + begin) * Sk;
        rows.insert(rows.end(), first, first + (end - begin) * Sk);
    }
    return rows;
}

// The first P tokens as one prefill call, then every later token as a one-token decode step.
template <typename Prefill, typename Decode>
Tensor prefill_then_decode(const LayerCase &c, int64_t P, Prefill prefill, Decode decode) {
    Tensor out({c.batch, c.seq_len, c.hidden});
    if (P > 0) place_tokens(out, prefill(c.x.tokens(0, P)), 0);
    for (int64_t t = P; t < c.seq_len; t++) place_tokens(out, decode(c.x.tokens(t, t + 1)), t);
    return out;
}

// A run's output and what it used: the types the layer holds, whatever the case asked.
template <typename Layer>
CaseRun ran(const Layer &layer, Tensor y) {
    const StorageTypes types = layer.storage_types();
    return {std::move(y), RunReport{types.dtype, types.kv_dtype, layer.weight_bytes(), layer.cache_bytes_per_token()}};
}

Tensor run_cached_attention(const CachedAttention &layer, const LayerCase &c, std::optional<int64_t> prefill) {
    std::optional<MaskView> mask;
    if (c.mask) mask = MaskView{c.mask->boolean.data(), c.mask->shape};
    if (c.cross) {
        return layer.cross_attention(c.x, layer.conditioning_cache(*c.context, *c.context),
                                     mask ? &*mask : nullptr);
    }
    if (!prefill) return layer.self_attention(c.x, nullptr, mask ? &*mask : nullptr);
    KVCache cache = layer.make_cache(c.batch, c.seq_len);
    if (!mask) {
        return prefill_then_decode(
            c, *prefill, [&](const Tensor &x) { return layer.self_attention(x, &cache); },
            [&](const Tensor &x) { return layer.decode_step(x, cache); });
    }
    // With a mask, each call takes the mask's rows of its own queries (a decode step is a
    // one-token self_attention, which takes a mask where decode_step does not).
    int64_t next_row = 0;
    const auto with_rows = [&](const Tensor &x) {
        const std::vector<uint8_t> rows = mask_rows(*c.mask, next_row, next_row + x.dim(1));
        const MaskView view{rows.data(), {c.batch, 1, x.dim(1), c.mask->shape[3]}};
        next_row += x.dim(1);
        return layer.self_attention(x, &cache, &view);
    };
    return prefill_then_decode(c, *prefill, with_rows, with_rows);
}

std::unique_ptr<LatentAttention> latent_layer(const LayerCase &c) {
    const std::string kind = c.kind->name;
    LatentAttentionConfig config = kind == "zaya_cca" ? LatentAttentionConfig::zaya(c.config)
                                                      : LatentAttentionConfig::cca(c.config, kind == "ccgqa");
    config.storage = {c.dtype, c.kv_dtype};
    return std::make_unique<LatentAttention>(config, c.weights);
}

Tensor run_latent_attention(const LatentAttention &layer, const LayerCase &c, std::optional<int64_t> prefill) {
    if (!prefill) return layer.forward(c.x);
    LatentState state = layer.make_state(c.batch, c.seq_len);
    return prefill_then_decode(
        c, *prefill, [&](const Tensor &x) { return layer.prefill(x, state); },
        [&](const Tensor &x) { return layer.decode_step(x, state); });
}

Tensor run_dsa(const DsaAttention &layer, const LayerCase &c, std::optional<int64_t> prefill) {
    if (!prefill) return layer.forward(c.x);
    DsaState state = layer.make_state(c.batch, c.seq_len);
    return prefill_then_decode(
        c, *prefill, [&](const Tensor &x) { return layer.prefill(x, state); },
        [&](const Tensor &x) { return layer.decode_step(x, state); });
}

}  // namespace

CaseRun run_case(const LayerCase &c, std::optional<int64_t> prefill) {
    if (prefill) validate_prefill(c, *prefill);
    require(c.kind->built, std::string("kind '") + c.kind->name + "' is not built yet");
    const std::string kind = c.kind->name;
    const StorageTypes types{c.dtype, c.kv_dtype};
    if (kind == "cached_attention") {
        CachedAttentionConfig config = CachedAttentionConfig::from(c.config, c.weights);
        config.storage = types;
        const CachedAttention layer(config, c.weights);
        return ran(layer, run_cached_attention(layer, c, prefill));
    }
    if (kind == "cca" || kind == "ccgqa" || kind == "zaya_cca") {
        const std::unique_ptr<LatentAttention> layer = latent_layer(c);
        return ran(*layer, run_latent_attention(*layer, c, prefill));
    }
    if (kind == "glm_dsa") {
        DsaConfig config = DsaConfig::from(c.config);
        config.storage = types;
        const DsaAttention layer(config, c.weights);
        return ran(layer, run_dsa(layer, c, prefill));
    }
    throw Error("kind '" + kind + "' has no layer module", Error::Kind::Internal);
}

}  // namespace hattn
