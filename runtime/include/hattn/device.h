// Where kernels run: on the CPU (the default) or on a GPU through CUDA or OpenCL.
//
// The device is process-wide, like the thread count: `hattn --device cuda`, HATTN_DEVICE=cuda or
// set_device(Device::CUDA). On a GPU every kernel runs its GPU variant (schedules/gpu/); tensors
// stay on the host side of the API, and the runtime copies what a kernel needs. Tensors marked
// resident (layer weights, KV caches, RoPE tables; Tensor::keep_on_device) keep a device copy
// across calls, so only what the host changed since the last call is uploaded. Within a layer
// call the intermediate results stay on the device too: a decode step of the attention and
// CCA/CCGQA layers (BitLinear included) uploads its input token and downloads its output and the
// rows it added to the caches, nothing else. The DSA layer also downloads its indexer's scores,
// because it ranks the top-k keys on the host (none while no query sees more than K keys: it then
// takes them all, unscored).
//
// OpenCL exists so that machines without an NVIDIA GPU run the same GPU code path, residency
// included: CI runs the GPU tests on PoCL, an OpenCL driver for CPUs.
#pragma once

#include <string>

namespace hattn {

enum class Device { CPU, CUDA, OpenCL };

// "cpu", "cuda", "opencl"; anything else throws Error naming the choices.
Device device_from_name(const std::string &name);
const char *device_name(Device device);

// Why `device` cannot run kernels here (no driver library, no device, ...), or "" when it can.
// Probes once per process.
std::string device_unavailable_reason(Device device);

// Makes `device` run every later kernel. Throws Error, changing nothing, when it is unavailable.
void set_device(Device device);
// The current device: HATTN_DEVICE's at first use (default cpu), then set_device's.
Device current_device();

// Waits for the work queued on the current device; nothing on the CPU. Kernels return with their
// outputs on the host, so only benchmarks that keep outputs on the device need it.
void device_sync();

}  // namespace hattn
