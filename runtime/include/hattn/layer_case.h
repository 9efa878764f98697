// A layer invocation read from files: a golden-case folder (spec/cases.md) or the files named one by
// one on the command line. Everything is read and validated here, before any kernel runs, so that
// bad input is reported as one Error naming the file, tensor or key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hattn/config.h"
#include "hattn/dtype.h"
#include "hattn/kinds.h"
#include "hattn/npy.h"
#include "hattn/safetensors.h"
#include "hattn/tensor.h"

namespace hattn {

struct LayerCase {
    const KindInfo *kind;
    ConfigReader config;  // the layer's own keys (seed or HF names)
    int64_t batch, seq_len, hidden;
    bool cross;        // cross-attention: keys and values come from `context`
    double tolerance;  // relative L2 bound of a golden case (1e-4 unless the case says otherwise)
    Weights weights;
    Tensor x;                     // [batch, seq_len, hidden]
    std::optional<Tensor> context;  // [batch, Sk, hidden] when cross
    std::optional<NpyArray> mask;   // bool [batch, 1, seq_len, Sk], True = masked
    // The storage types the case asks for (spec/attention.md section 5; a case folder's "dtype"
    // and "kv_dtype", default f32 and the dtype).
    DType dtype = DType::F32, kv_dtype = DType::F32;

    // Whether the case runs causally, so that prefill + decode applies to it.
    bool causal() const;
};

// A golden-case folder: config.json, weights.safetensors, x.npy, and context.npy / mask.npy.
LayerCase load_case_dir(const std::string &dir);

struct LayerFiles {
    std::string kind, config, weights, input;
    std::string context, mask;  // empty when absent
    // Prepended to every weight name: one layer of a whole model's checkpoint ("model.layers.3.self_attn.").
    std::string weight_prefix;
};
// The files named one by one; config may be a model's own config.json.
LayerCase load_case_files(const LayerFiles &files);

// Sets the storage types a run asks for (a case's own, or the CLI's --dtype and --kv-dtype),
// checking them: a layer's dtype is f32, bf16 or f16; its caches' also int8. Errors name `source`.
void set_storage_types(LayerCase &c, DType dtype, DType kv_dtype, const std::string &source);

// Checks a `--prefill P` request against the case: 0 <= P <= seq_len, causal cases only.
void validate_prefill(const LayerCase &c, int64_t prefill);

// What a run used: its storage types, and the bytes of the layer's weights as it holds them and of
// its cache or state per token (`hattn run --report`).
struct RunReport {
    DType dtype = DType::F32, kv_dtype = DType::F32;
    int64_t weight_bytes = 0, cache_bytes_per_token = 0;
};
struct CaseRun {
    Tensor y;  // [batch, seq_len, hidden]
    RunReport report;
};

// Runs the case's layer on its inputs: the whole sequence at once, or with `prefill` the first P
// tokens as one prefill call and every later token as a one-token decode step. Throws Error when
// the kind is not built yet, or where the case asks for storage types this build does not run
// (a run in other types than the case names would show nothing: spec/cases.md).
CaseRun run_case(const LayerCase &c, std::optional<int64_t> prefill);

}  // namespace hattn
