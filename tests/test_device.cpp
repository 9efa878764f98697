// Device selection and residency: what stays on a GPU between calls, and that every host change
// reaches it. Runs on each GPU API the machine offers (OpenCL through PoCL on CI machines).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>

#include "device_residency.h"
#include "hattn/device.h"
#include "hattn/error.h"
#include "hattn/kernels/attention.h"
#include "hattn/kernels/projection.h"
#include "hattn/kv_cache.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/layers/linear.h"
#include "hattn/safetensors_writer.h"
#include "support/compare.h"
#include "support/device.h"
#include "support/errors.h"
#include "support/random.h"
#include "support/temp_dir.h"

namespace hattn {
namespace {

TEST(Device, NamesRoundTripAndUnknownNamesAreOneLineErrors) {
    for (Device d : {Device::CPU, Device::CUDA, Device::OpenCL}) EXPECT_EQ(device_from_name(device_name(d)), d);
    EXPECT_EQ(testing::error_message([] { device_from_name("tpu"); }), "unknown device 'tpu' (cpu, cuda, opencl)");
}

TEST(Device, AnUnavailableDeviceIsRefusedAndTheCurrentOneStays) {
    set_device(Device::CPU);
    for (Device d : {Device::CUDA, Device::OpenCL}) {
        const std::string reason = device_unavailable_reason(d);
        if (reason.empty()) continue;
        EXPECT_EQ(testing::error_message([d] { set_device(d); }),
                  std::string("device ") + device_name(d) + " is unavailable: " + reason);
        EXPECT_EQ(current_device(), Device::CPU);
    }
    // An integer cast to Device that names none (the kernels would find no variant for it).
    const std::string not_a_device = testing::error_message([] { set_device(static_cast<Device>(7)); });
    EXPECT_NE(not_a_device.find("is unavailable: not a device (7)"), std::string::npos) << not_a_device;
    EXPECT_EQ(current_device(), Device::CPU);
}

class GpuResidency : public testing::OnEachGpu {};

TEST_P(GpuResidency, LayerWeightsAreUploadedOnce) {
    const Linear layer = Linear::dense(testing::random_tensor({48, 32}, 1), testing::random_tensor({48}, 2));
    const Tensor x = testing::random_tensor({3, 32}, 3);
    const Tensor expected = layer.apply(x);  // on the CPU
    const testing::OnDevice on(GetParam());
    const int64_t before = detail::resident_upload_bytes();
    const Tensor first = layer.apply(x);
    const int64_t after_first = detail::resident_upload_bytes();
    const Tensor second = layer.apply(x);
    EXPECT_EQ(after_first - before, (48 * 32 + 48) * int64_t(sizeof(float)));
    EXPECT_EQ(detail::resident_upload_bytes(), after_first) << "the second call uploaded weights again";
    EXPECT_LE(testing::relative_l2(first, expected), 1e-6);
    EXPECT_LE(testing::relative_l2(second, expected), 1e-6);
}

// Decodes one query against the cache on the current device.
Tensor decode(const KVCache &cache, const Tensor &q) {
    Tensor out(q.shape());
    attention_decode(q.view(), cache.keys(), cache.values(), cache.lengths(), 0.25f, out.view());
    return out;
}

TEST_P(GpuResidency, ADecodeStepUploadsOnlyTheNewRows) {
    const int64_t B = 1, Hkv = 2, D = 16, H = 4;
    KVCache gpu_cache(B, Hkv, D, 64), cpu_cache(B, Hkv, D, 64);
    const Tensor prompt = testing::random_tensor({B, 40, Hkv, D}, 4), prompt_v = testing::random_tensor({B, 40, Hkv, D}, 5);
    const Tensor q = testing::random_tensor({B, H, D}, 6);
    const testing::OnDevice on(GetParam());
    gpu_cache.append(prompt.view(), prompt_v.view());
    decode(gpu_cache, q);  // uploads the whole cache once
    for (int step = 0; step < 3; step++) {
        const Tensor k = testing::random_tensor({B, 1, Hkv, D}, 10 + step), v = testing::random_tensor({B, 1, Hkv, D}, 20 + step);
        gpu_cache.append(k.view(), v.view());
        const int64_t before = detail::resident_upload_bytes();
        const Tensor got = decode(gpu_cache, q);
        EXPECT_EQ(detail::resident_upload_bytes() - before, 2 * Hkv * D * int64_t(sizeof(float)))
            << "step " << step << " uploaded more than its new K and V rows";
        set_device(Device::CPU);
        cpu_cache = gpu_cache;  // the host values are the truth
        const Tensor expected = decode(cpu_cache, q);
        set_device(GetParam());
        EXPECT_LE(testing::relative_l2(got, expected), 1e-6) << "step " << step;
    }
}

TEST_P(GpuResidency, HostChangesToTheCacheReachTheDevice) {
    const int64_t B = 2, Hkv = 1, D = 8, H = 2;
    KVCache cache(B, Hkv, D, 16);
    const Tensor k = testing::random_tensor({B, 6, Hkv, D}, 30), v = testing::random_tensor({B, 6, Hkv, D}, 31);
    const Tensor q = testing::random_tensor({B, H, D}, 32);
    const testing::OnDevice on(GetParam());
    cache.append(k.view(), v.view());
    decode(cache, q);      // the device now holds both sequences
    cache.fork(0, 1);      // a host-side copy of sequence 0 over sequence 1
    cache.truncate_to(4);  // and a shorter view of both
    const Tensor got = decode(cache, q);
    set_device(Device::CPU);
    const Tensor expected = decode(cache, q);
    EXPECT_LE(testing::relative_l2(got, expected), 1e-6);
}

TEST_P(GpuResidency, ADeviceOutputStaysOnTheDeviceUntilFetched) {
    const Tensor x = testing::random_tensor({2, 16}, 40), w = testing::random_tensor({8, 16}, 41);
    Tensor expected({2, 8}), y({2, 8});
    project(x.view(), w.view(), nullptr, expected.view());
    y.keep_on_device(Residency::DeviceOutput);
    const testing::OnDevice on(GetParam());
    project(x.view(), w.view(), nullptr, y.view());
    device_sync();
    EXPECT_EQ(y.values(), std::vector<float>(16, 0.0f)) << "the result was copied back without a fetch";
    y.fetch_from_device();
    EXPECT_LE(testing::relative_l2(y, expected), 1e-6);
}

// Host writes into kernel results held on the device survive a fetch, and a copy made on the CPU
// (another device) reads the results, not the stale host values.
TEST_P(GpuResidency, HostWritesAndCpuCopiesSeeWhatOnlyTheDeviceHeld) {
    const Tensor x = testing::random_tensor({2, 16}, 42), w = testing::random_tensor({8, 16}, 43);
    Tensor expected({2, 8});
    project(x.view(), w.view(), nullptr, expected.view());
    const Tensor ones({1, 8}, std::vector<float>(8, 1.0f));
    Tensor y({2, 8});
    y.keep_on_device(Residency::DeviceOutput);
    {
        const testing::OnDevice on(GetParam());
        project(x.view(), w.view(), nullptr, y.view());
        copy_into(ones.view(), TensorView(y.data() + 8, {1, 8}));  // row 1, on the host
    }
    Tensor copied({2, 8});
    copy_into(y.view(), copied.view());  // on the CPU
    std::copy_n(ones.data(), 8, expected.data() + 8);
    EXPECT_LE(testing::relative_l2(copied, expected), 1e-6) << "the CPU copy read stale host values";
    y.fetch_from_device();
    EXPECT_LE(testing::relative_l2(y, expected), 1e-6) << "the fetch overwrote the host's row";
}

// A GQA layer with RoPE and biases, seeded random weights, loaded from a safetensors file; `shape`
// changes its config before it is built.
CachedAttention gqa_layer(const testing::TempDir &dir, int64_t E, int64_t H, int64_t Hkv, int64_t D,
                          const std::function<void(CachedAttentionConfig &)> &shape = {}) {
    std::map<std::string, Tensor> tensors{
        {"query_projection.weight", testing::random_tensor({H * D, E}, 50)},
        {"key_projection.weight", testing::random_tensor({Hkv * D, E}, 51)},
        {"value_projection.weight", testing::random_tensor({Hkv * D, E}, 52)},
        {"output_projection.weight", testing::random_tensor({E, H * D}, 53)},
        {"query_projection.bias", testing::random_tensor({H * D}, 54)},
        {"key_projection.bias", testing::random_tensor({Hkv * D}, 55)},
        {"value_projection.bias", testing::random_tensor({Hkv * D}, 56)},
        {"output_projection.bias", testing::random_tensor({E}, 57)}};
    write_safetensors(dir.file("gqa.safetensors"), tensors);
    CachedAttentionConfig config;
    config.embedding_dimension = E, config.heads = H, config.kv_heads = Hkv, config.head_dimension = D;
    config.bias = true, config.rope_base = 10000.0;
    if (shape) shape(config);
    return CachedAttention(config, Weights::open(dir.file("gqa.safetensors")));
}

// "No host round trip": after the first steps have placed weights, cache and RoPE table on the
// device, a decode step uploads only its input token and downloads only its output and the new
// K and V rows (written into the cache on the device, then mirrored to the host). The head dim
// keeps every cache row aligned for OpenCL sub-buffers. `sliding` (if given) is the caches' kind;
// then a last step moves the kept rows to row 0 (on the host, after those rows came down).
void check_decode_step_transfers(Device device, const std::function<void(CachedAttentionConfig &)> &shape = {},
                                 std::optional<KVCache::Sliding> sliding = std::nullopt) {
    const int64_t B = 2, E = 64, H = 4, Hkv = 2, D = 32;
    const testing::TempDir dir;
    // Two instances: CPU kernels touching the GPU layer's weights would make them stale.
    CachedAttention layer = gqa_layer(dir, E, H, Hkv, D, shape), cpu_layer = gqa_layer(dir, E, H, Hkv, D, shape);
    const auto make_cache = [&] { return sliding ? KVCache::sliding(B, Hkv, D, 32, *sliding) : layer.make_cache(B, 32); };
    KVCache gpu_cache = make_cache(), cpu_cache = make_cache();
    const Tensor prompt = testing::random_tensor({B, 9, E}, 58);
    cpu_layer.self_attention(prompt, &cpu_cache);
    {
        const testing::OnDevice on(device);
        layer.self_attention(prompt, &gpu_cache);
    }
    for (int step = 0; step < 4; step++) {
        const Tensor x = testing::random_tensor({B, 1, E}, 60 + step);
        const Tensor expected = cpu_layer.decode_step(x, cpu_cache);
        const testing::OnDevice on(device);
        const detail::Transfers before = detail::data_transfers();
        const Tensor got = layer.decode_step(x, gpu_cache);
        const detail::Transfers after = detail::data_transfers();
        EXPECT_LE(testing::relative_l2(got, expected), 1e-5) << "step " << step;
        if (step == 0) continue;  // the RoPE table grew to cover position 10: uploaded again
        const int64_t f = sizeof(float);
        EXPECT_EQ(after.uploaded - before.uploaded, B * E * f) << "step " << step << " uploaded more than x";
        EXPECT_EQ(after.downloaded - before.downloaded, B * E * f + 2 * B * Hkv * D * f)
            << "step " << step << " downloaded more than y and the new K and V rows";
    }
    EXPECT_EQ(gpu_cache.lengths(), cpu_cache.lengths());
    if (sliding) {
        const Tensor x = testing::random_tensor({B, 1, E}, 69);
        const Tensor expected = cpu_layer.decode_step(x, cpu_cache);
        const testing::OnDevice on(device);
        EXPECT_LE(testing::relative_l2(layer.decode_step(x, gpu_cache), expected), 1e-5) << "the step that moved rows";
        EXPECT_GT(gpu_cache.first_positions()[0], 0);
    }
    set_device(Device::CPU);
    const Tensor x = testing::random_tensor({B, 1, E}, 70);
    EXPECT_LE(testing::relative_l2(layer.decode_step(x, gpu_cache), cpu_layer.decode_step(x, cpu_cache)), 1e-5)
        << "the host copy of the cache written on the device differs";
}

TEST_P(GpuResidency, AnAttentionLayerDecodeStepMovesOnlyItsInputOutputAndNewRows) {
    check_decode_step_transfers(GetParam());
}

// The same with what Llama 4's layers add: a QK-norm (its weights resident too), chunks, and the
// query temperature's table (grown at step 0 with the RoPE table).
TEST_P(GpuResidency, AQkNormedChunkedLayerDecodeStepMovesNoMore) {
    check_decode_step_transfers(GetParam(), [](CachedAttentionConfig &c) {
        c.qk_norm = CachedAttentionConfig::QkNorm{};
        c.qk_norm->weighted = false;
        c.attention_chunk = 8;
        c.query_temperature = CachedAttentionConfig::QueryTemperature{4.0, 0.5};
    });
}

// A sliding layer's sliding cache (window 4, 13 rows: the 13 tokens of these steps fit, the 14th
// moves the 3 kept rows) moves no more while it has rows.
TEST_P(GpuResidency, ASlidingLayerDecodeStepMovesNoMore) {
    check_decode_step_transfers(GetParam(), [](CachedAttentionConfig &c) { c.sliding_window = 4; },
                                KVCache::Sliding{4, 13});
}

HATTN_INSTANTIATE_ON_EACH_GPU(GpuResidency);

}  // namespace
}  // namespace hattn
