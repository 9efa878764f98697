// The workloads `hattn bench` and the Google Benchmark suites time: seeded random inputs (never
// zeros) in the shapes of ../shared/spec/cli.md, set up once, run many times.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "hattn/dtype.h"

namespace hattn::bench {

// One timed operation, with the work it does per run.
struct Workload {
    std::function<void()> run;
    double flops = 0;      // floating-point operations per run (prefill)
    double bytes = 0;      // bytes of K and V read per run (decode)
    double tokens = 0;     // tokens processed per run (layers)
    double cache_bytes_per_token = 0;  // a layer's cache, as it holds it (layers)
    std::shared_ptr<void> state;  // keeps the inputs alive
};

struct AttentionShape {
    int64_t batch = 1, heads = 16, kv_heads = 0, head_dim = 64;
    int64_t seq = 2048;     // prefill: queries = keys
    int64_t kv_len = 8192;  // decode
    int64_t capacity = 0;   // decode: the cache's room, at least kv_len (0: kv_len)
    bool causal = false;
    float softcap = 0.0f;   // Gemma 2's score soft-capping (0: none)
    // prefill: a boolean mask hiding half the keys at random (the masked variant); the FLOPs
    // still count every visible pair, since the kernel scores them all.
    bool masked = false;
    DType kv_dtype = DType::F32;  // the K and V storage the kernels read in place
    DType dtype = DType::F32;     // the queries' values are rounded to it, as a layer's dtype rounds them
};

Workload prefill_workload(const AttentionShape &shape);
Workload decode_workload(const AttentionShape &shape);
Workload projection_workload(int64_t rows, int64_t in, int64_t out, DType weights = DType::F32);
// BitLinear of the same shape; `bytes` is the packed weight size.
Workload bitlinear_workload(int64_t rows, int64_t in, int64_t out);
Workload rope_workload(int64_t batch, int64_t seq, int64_t heads, int64_t head_dim);

// DSA's stages alone, GLM-5-shaped: sparse attention of S queries over K gathered keys each (H=16,
// keys 128 + 64, values 128); the indexer's scores of S queries against S keys (32 heads of 128),
// in blocks of 256 queries as the layer runs them.
Workload dsa_sparse_workload(int64_t seq, int64_t topk);
// The same stage in the absorbed (latent) form the layer decodes with: queries of R + Rd = 576
// against latent rows shared by all 16 heads, values their first R = 512 floats. A `window` > 0
// draws each query's keys from its last `window` tokens only (a control: the same work per query
// over a working set that does not grow with S). `queries` > 0 keeps only the last that many
// queries (1: a decode step over a cache of `seq` tokens).
Workload dsa_sparse_latent_workload(int64_t seq, int64_t topk, int64_t window = 0, int64_t queries = 0);
// The indexer's scores of the last `queries` of seq tokens (0: all of them; 1: a decode step).
Workload dsa_index_workload(int64_t seq, int64_t queries = 0);

struct LayerShape {
    std::string layer;  // mha | gqa | cca | ccgqa | dsa
    int64_t hidden = 2048, heads = 16, batch = 1, seq = 2048;
    bool decode = false;
    int64_t kv_len = 0;  // decode: tokens already in the cache
    int64_t window = 0;  // mha | gqa: a sliding window of this many keys (0: none)
    StorageTypes storage;
};

// Throws Error (exit 2 in the CLI) for a layer that is not built yet.
Workload layer_workload(const LayerShape &shape);

// One untimed run: first touch of buffers, the thread pool's start; on a GPU the kernels' JIT
// compilation and the first upload of resident inputs.
void warm_up(const std::function<void()> &run);

// One run's wall time in milliseconds, until the device has finished its work.
double wall_ms(const std::function<void()> &run);

// Milliseconds per run: warm_up, then the median wall_ms of `reps` runs.
double median_ms(const std::function<void()> &run, int reps);

}  // namespace hattn::bench
