#include "bench/support/ceilings.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench/support/workloads.h"
#include "hattn/cpu_features.h"

extern "C" void openblas_set_num_threads(int);

namespace hattn::bench {

namespace {

// Sums its slice with several independent accumulators so the loop is bound by memory, not by
// the add latency.
float sum_slice(const float *data, size_t n) {
    float acc[16] = {};
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 16; k++) acc[k] += data[i + k];
    }
    for (; i < n; i++) acc[0] += data[i];
    float total = 0;
    for (float a : acc) total += a;
    return total;
}

double read_bandwidth(int threads, double bytes) {
    const size_t n = static_cast<size_t>(bytes / sizeof(float));
    std::vector<float> data(n, 1.0f);  // first touch outside the timed runs
    volatile float sink = 0;
    const double ms = median_ms(
        [&] {
            std::vector<std::thread> pool;
            std::vector<float> partial(threads);
            for (int t = 0; t < threads; t++) {
                pool.emplace_back([&, t] {
                    const size_t begin = n * t / threads, end = n * (t + 1) / threads;
                    partial[t] = sum_slice(data.data() + begin, end - begin);
                });
            }
            for (auto &th : pool) th.join();
            for (float p : partial) sink = sink + p;
        },
        3);
    return bytes / ms / 1e6;
}

double sgemm_rate(int threads, int n) {
    openblas_set_num_threads(threads);
    std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
    const double ms = median_ms(
        [&] {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n,
                        b.data(), n, 0.0f, c.data(), n);
        },
        3);
    return 2.0 * n * n * double(n) / ms / 1e6;
}

}  // namespace

Ceilings measure_ceilings(int threads, double read_bytes, int gemm_n) {
    return {read_bandwidth(threads, read_bytes), sgemm_rate(threads, gemm_n)};
}

void ensure_openblas_coretype(char **argv) {
    if (std::getenv("OPENBLAS_CORETYPE")) return;
    const std::vector<std::string> f = host_cpu_features();
    if (std::find(f.begin(), f.end(), "avx512_skylake") == f.end()) return;
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    execv("/proc/self/exe", argv);  // only returns on failure: then run with what we have
}

}  // namespace hattn::bench
