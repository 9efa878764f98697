#include "hattn/kernels/rope.h"

#include <algorithm>
#include <cmath>

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

RopeTable::RopeTable(int64_t rotary_dim, double base) : rotary_dim_(rotary_dim), base_(base) {
    require(rotary_dim >= 2 && rotary_dim % 2 == 0,
            "RoPE: rotary dimension must be even and positive, got " + std::to_string(rotary_dim));
    require(base > 0, "RoPE: base must be positive, got " + std::to_string(base));
    cos_ = Tensor({0, rotary_dim / 2});
    sin_ = Tensor({0, rotary_dim / 2});
}

void RopeTable::reserve(int64_t positions) {
    if (positions <= positions_) return;
    const int64_t grown = std::max(positions, 2 * positions_);  // amortised growth
    const int64_t half = rotary_dim_ / 2;
    Tensor cos({grown, half}), sin({grown, half});
    std::copy(cos_.values().begin(), cos_.values().end(), cos.data());
    std::copy(sin_.values().begin(), sin_.values().end(), sin.data());
    for (int64_t p = positions_; p < grown; p++) {
        for (int64_t i = 0; i < half; i++) {
            const double angle = double(p) * std::pow(base_, -2.0 * double(i) / double(rotary_dim_));
            cos.data()[p * half + i] = static_cast<float>(std::cos(angle));
            sin.data()[p * half + i] = static_cast<float>(std::sin(angle));
        }
    }
    cos.keep_on_device(Residency::ReadOnly);
    sin.keep_on_device(Residency::ReadOnly);
    cos_ = std::move(cos);
    sin_ = std::move(sin);
    positions_ = grown;
}

void apply_rope(const TensorView &x, const RopeTable &table, const std::vector<int32_t> &start,
                const TensorView &y, RopeLayout layout) {
    require(x.rank() == 4, "RoPE: input must be [B, S, H, D], got " + shape_to_string(x.shape));
    require(y.shape == x.shape, "RoPE: output " + shape_to_string(y.shape) + " differs from input " +
                                    shape_to_string(x.shape));
    require(table.rotary_dim() <= x.dim(3),
            "RoPE: rotary dimension " + std::to_string(table.rotary_dim()) +
                " exceeds head dimension " + std::to_string(x.dim(3)));
    require(static_cast<int64_t>(start.size()) == x.dim(0), "RoPE: one start position per sequence");
    for (int32_t s : start) {
        require(s >= 0 && s + x.dim(1) <= table.positions(),
                "RoPE: positions up to " + std::to_string(s + x.dim(1)) + " exceed the table");
    }
    if (x.size() == 0) return;
    auto cos_b = table.cos().halide_buffer(), sin_b = table.sin().halide_buffer();
    Halide::Runtime::Buffer<int32_t> start_b(const_cast<int32_t *>(start.data()),
                                            static_cast<int>(start.size()));
    auto xb = x.halide_buffer(), yb = y.halide_buffer();
    const bool neox = layout == RopeLayout::NeoX;
    detail::call_kernel(neox ? "rope" : "rope_interleaved",
                        neox ? detail::rope_kernel() : detail::rope_interleaved_kernel(), xb.raw_buffer(),
                        cos_b.raw_buffer(), sin_b.raw_buffer(), start_b.raw_buffer(), yb.raw_buffer());
}

}  // namespace hattn
