// Google Benchmark suite of every kernel, each rate also given as a fraction of the matching
// in-run ceiling (sgemm for compute-bound kernels, read bandwidth for memory-bound ones).
//
//   HATTN_BENCH_THREADS  threads for the kernels and the ceilings (default: every core)
//   HATTN_BENCH_SMOKE=1  tiny shapes and ceilings: ctest runs this so the suite never rots
//   --ceilings           print the ceilings as one JSON line and exit (scripts/bench-vs-peers)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "bench/support/ceilings.h"
#include "bench/support/workloads.h"
#include "hattn/threads.h"

namespace hattn::bench {
namespace {

Ceilings ceilings;
bool smoke = false;

// Times each run itself (manual time), so the counters are plain rates: GFLOP/s or GB/s, and
// the fraction of the in-run ceiling.
void run(benchmark::State &state, const Workload &w) {
    double seconds = 0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        w.run();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        state.SetIterationTime(s);
        seconds += s;
    }
    const double runs = static_cast<double>(state.iterations());
    if (w.flops > 0) {
        const double gflops = w.flops * runs / seconds / 1e9;
        state.counters["GFLOP/s"] = gflops;
        state.counters["of_sgemm"] = gflops / ceilings.sgemm_gflops;
    } else if (w.bytes > 0) {
        const double gbs = w.bytes * runs / seconds / 1e9;
        state.counters["GB/s"] = gbs;
        state.counters["of_read_bw"] = gbs / ceilings.read_gbs;
    }
}

void projection(benchmark::State &state) {
    run(state, projection_workload(state.range(0), state.range(1), state.range(2)));
}

void rope(benchmark::State &state) { run(state, rope_workload(1, state.range(0), 16, state.range(1))); }

// H=16 S x S prefill at head dim D, causal or not: state's arguments (S, D, causal).
AttentionShape prefill_shape(const benchmark::State &state, bool masked) {
    AttentionShape s;
    s.seq = state.range(0);
    s.head_dim = state.range(1);
    s.heads = 16;
    s.causal = state.range(2) != 0;
    s.masked = masked;
    return s;
}

void prefill(benchmark::State &state) { run(state, prefill_workload(prefill_shape(state, false))); }
// The same with a mask hiding half the keys (attention_prefill_masked).
void prefill_masked(benchmark::State &state) { run(state, prefill_workload(prefill_shape(state, true))); }

void decode(benchmark::State &state) {
    AttentionShape s;
    s.heads = 32;
    s.kv_heads = state.range(1);
    s.head_dim = 128;
    s.kv_len = state.range(0);
    s.batch = state.range(2);
    run(state, decode_workload(s));
}

void dsa_sparse(benchmark::State &state) { run(state, dsa_sparse_workload(state.range(0), state.range(1))); }
void dsa_sparse_latent(benchmark::State &state) {
    run(state, dsa_sparse_latent_workload(state.range(0), state.range(1), state.range(2)));
}
// One query (a decode step) over a cache of T tokens, K of them selected.
void dsa_sparse_latent_step(benchmark::State &state) {
    run(state, dsa_sparse_latent_workload(state.range(0), state.range(1), 0, 1));
}
void dsa_index(benchmark::State &state) { run(state, dsa_index_workload(state.range(0))); }
// One query (a decode step) over a cache of T tokens.
void dsa_index_step(benchmark::State &state) { run(state, dsa_index_workload(state.range(0), 1)); }
void bitlinear_gemv(benchmark::State &state) { run(state, bitlinear_workload(1, state.range(0), state.range(0))); }

void register_all() {
    auto unit = [](benchmark::internal::Benchmark *b) { return b->Unit(benchmark::kMillisecond)->UseManualTime(); };
    if (smoke) {
        unit(benchmark::RegisterBenchmark("projection", projection))->Args({3, 40, 24});
        unit(benchmark::RegisterBenchmark("rope", rope))->Args({16, 32});
        unit(benchmark::RegisterBenchmark("prefill", prefill))->Args({64, 32, 1});
        unit(benchmark::RegisterBenchmark("prefill_masked", prefill_masked))->Args({64, 32, 1});
        unit(benchmark::RegisterBenchmark("decode", decode))->Args({128, 8, 1});
        unit(benchmark::RegisterBenchmark("dsa_sparse", dsa_sparse))->Args({64, 8});
        unit(benchmark::RegisterBenchmark("dsa_sparse_latent", dsa_sparse_latent))->Args({64, 8, 0});
        unit(benchmark::RegisterBenchmark("dsa_sparse_latent_step", dsa_sparse_latent_step))->Args({64, 8});
        unit(benchmark::RegisterBenchmark("dsa_index", dsa_index))->Args({64});
        unit(benchmark::RegisterBenchmark("dsa_index_step", dsa_index_step))->Args({64});
        unit(benchmark::RegisterBenchmark("bitlinear", bitlinear_gemv))->Args({128});
        return;
    }
    // Projections: decode (one token, GEMV) and prefill (GEMM) at E = 2048.
    unit(benchmark::RegisterBenchmark("projection", projection))->Args({1, 2048, 2048})->Args({2048, 2048, 2048});
    unit(benchmark::RegisterBenchmark("rope", rope))->Args({2048, 64})->Args({2048, 128});
    unit(benchmark::RegisterBenchmark("prefill", prefill))
        ->ArgNames({"S", "D", "causal"})
        ->Args({2048, 64, 1})->Args({2048, 128, 1})->Args({4096, 32, 1})->Args({4096, 64, 0})->Args({16384, 64, 1});
    unit(benchmark::RegisterBenchmark("prefill_masked", prefill_masked))
        ->ArgNames({"S", "D", "causal"})
        ->Args({2048, 64, 1})
        ->Args({2048, 128, 1})
        ->Args({2048, 192, 1});
    unit(benchmark::RegisterBenchmark("decode", decode))
        ->ArgNames({"T", "Hkv", "B"})
        ->Args({32768, 32, 1})->Args({32768, 8, 1})->Args({32768, 8, 8});
    // DSA: the sparse stage must grow linearly in S at fixed K; the indexer is quadratic.
    unit(benchmark::RegisterBenchmark("dsa_sparse", dsa_sparse))
        ->ArgNames({"S", "K"})->Args({4096, 256})->Args({8192, 256})->Args({16384, 256});
    unit(benchmark::RegisterBenchmark("dsa_sparse_latent", dsa_sparse_latent))
        ->ArgNames({"S", "K", "window"})->Args({4096, 256, 0})->Args({8192, 256, 0})->Args({16384, 256, 0})
        ->Args({16384, 256, 4096});
    unit(benchmark::RegisterBenchmark("dsa_sparse_latent_step", dsa_sparse_latent_step))
        ->ArgNames({"T", "K"})->Args({4096, 2048})->Args({32768, 2048});
    unit(benchmark::RegisterBenchmark("dsa_index", dsa_index))->ArgNames({"S"})->Args({4096})->Args({8192});
    unit(benchmark::RegisterBenchmark("dsa_index_step", dsa_index_step))->ArgNames({"T"})->Args({4096})->Args({32768});
    unit(benchmark::RegisterBenchmark("bitlinear", bitlinear_gemv))->ArgNames({"E"})->Args({2048});
}

}  // namespace
}  // namespace hattn::bench

int main(int argc, char **argv) {
    using namespace hattn::bench;
    ensure_openblas_coretype(argv);
    smoke = std::getenv("HATTN_BENCH_SMOKE") != nullptr;
    const char *t = std::getenv("HATTN_BENCH_THREADS");
    const int threads = t ? std::atoi(t) : static_cast<int>(std::thread::hardware_concurrency());
    hattn::set_num_threads(threads);
    ceilings = measure_ceilings(threads, smoke ? 16.0 * (1 << 20) : 2.0 * (1 << 30), smoke ? 64 : 2048);
    if (argc > 1 && std::string(argv[1]) == "--ceilings") {
        std::printf("{\"threads\": %d, \"read_bw_GBps\": %.3f, \"sgemm_GFLOPs\": %.3f}\n", threads,
                    ceilings.read_gbs, ceilings.sgemm_gflops);
        return 0;
    }
    benchmark::AddCustomContext("threads", std::to_string(threads));
    benchmark::AddCustomContext("read_bw_GBps", std::to_string(ceilings.read_gbs));
    benchmark::AddCustomContext("sgemm_GFLOPs", std::to_string(ceilings.sgemm_gflops));
    register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
