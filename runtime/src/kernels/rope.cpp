#include "hattn/kernels/rope.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

std::vector<double> rope_frequencies(int64_t rotary_dim, double base, const RopeScaling &scaling) {
    require(rotary_dim >= 2 && rotary_dim % 2 == 0,
            [&] { return "RoPE: rotary dimension must be even and positive, got " + std::to_string(rotary_dim); });
    require(std::isfinite(base) && base > 0,
            [&] { return "RoPE: base must be positive, got " + std::to_string(base); });
    require(scaling.type == RopeScaling::Type::None || (std::isfinite(scaling.factor) && scaling.factor > 0),
            [&] { return "RoPE: scaling factor must be positive and finite, got " + std::to_string(scaling.factor); });
    if (scaling.type == RopeScaling::Type::Dynamic) {
        require(rotary_dim > 2, "RoPE: dynamic scaling needs a rotary dimension above 2");
        require(std::isfinite(scaling.length) && std::isfinite(scaling.original_context),
                "RoPE: dynamic scaling needs a finite length and original context");
        require(std::isfinite(scaling.alpha) && scaling.alpha > 0,
                [&] { return "RoPE: dynamic scaling's alpha must be positive, got " + std::to_string(scaling.alpha); });
        const double d = double(rotary_dim);
        // Past the original context transformers' dynamic update recomputes the base without
        // alpha (Hunyuan's rotary embedding reads alpha only at construction).
        const bool past = scaling.length > scaling.original_context;
        base *= past ? std::pow(scaling.factor * scaling.length / scaling.original_context - (scaling.factor - 1.0), d / (d - 2.0))
                     : std::pow(scaling.alpha, d / (d - 2.0));
    }
    std::vector<double> frequency(rotary_dim / 2);
    for (size_t i = 0; i < frequency.size(); i++) {
        frequency[i] = std::pow(base, -2.0 * double(i) / double(rotary_dim));
    }
    if (scaling.type == RopeScaling::Type::Linear) {
        for (double &f : frequency) f /= scaling.factor;
    } else if (scaling.type == RopeScaling::Type::Llama3) {
        const double low = scaling.low_freq_factor, high = scaling.high_freq_factor, context = scaling.original_context;
        require(low > 0 && high > low && context > 0, "RoPE: llama3 scaling needs 0 < low_freq_factor < high_freq_factor "
                                                      "and a positive original_max_position_embeddings");
        constexpr double two_pi = 6.283185307179586476925286766559;
        for (double &f : frequency) {
            const double wavelength = two_pi / f;
            if (wavelength > context / low) {
                f /= scaling.factor;  // long wavelengths: stretched
            } else if (wavelength >= context / high) {
                const double smooth = (context / wavelength - low) / (high - low);
                f = (1.0 - smooth) * f / scaling.factor + smooth * f;
            }  // short wavelengths: as trained
        }
    } else if (scaling.type == RopeScaling::Type::LongRope) {
        const std::vector<double> &factors = scaling.long_factors_used ? scaling.long_factors : scaling.short_factors;
        require(factors.size() == frequency.size(), [&] {
            return "RoPE: longrope has " + std::to_string(factors.size()) + " factors for the " +
                   std::to_string(frequency.size()) + " pairs of rotary dim " + std::to_string(rotary_dim);
        });
        for (size_t i = 0; i < frequency.size(); i++) {
            require(factors[i] > 0, "RoPE: longrope's factors must be positive");
            frequency[i] /= factors[i];
        }
    } else if (scaling.type == RopeScaling::Type::Yarn) {
        require(scaling.original_context > 0 && scaling.beta_fast > 0 && scaling.beta_slow > 0,
                "RoPE: yarn scaling needs a positive original_max_position_embeddings, beta_fast and beta_slow");
        // The pair index at which a frequency turns `turns` times over the original context
        // (fractional; pair i turns original_context * f_i / 2 pi times).
        const auto pair_turning = [&](double turns) {
            constexpr double two_pi = 6.283185307179586476925286766559;
            return double(rotary_dim) * std::log(scaling.original_context / (turns * two_pi)) / (2.0 * std::log(base));
        };
        double low = pair_turning(scaling.beta_fast), high = pair_turning(scaling.beta_slow);
        if (scaling.truncate) low = std::floor(low), high = std::ceil(high);
        low = std::max(low, 0.0);
        high = std::min(high, double(rotary_dim - 1));
        if (low == high) high += 0.001;  // as transformers and the paper's code: no empty ramp
        for (size_t i = 0; i < frequency.size(); i++) {
            const double stretched = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
            frequency[i] = stretched * frequency[i] / scaling.factor + (1.0 - stretched) * frequency[i];
        }
    }
    return frequency;
}

namespace {
RopeAmplitude constant(double amplitude) {
    require(std::isfinite(amplitude) && amplitude > 0,
            [&] { return "RoPE: the amplitude must be positive, got " + std::to_string(amplitude); });
    return [amplitude](int64_t) { return amplitude; };
}
}  // namespace

RopeTable::RopeTable(int64_t rotary_dim, double base, int64_t positions)
    : RopeTable(nullptr, rope_frequencies(rotary_dim, base), positions, constant(1.0)) {}

RopeTable::RopeTable(std::vector<double> frequencies, int64_t positions, double amplitude)
    : RopeTable(nullptr, std::move(frequencies), positions, constant(amplitude)) {}

RopeTable::RopeTable(std::vector<double> frequencies, int64_t positions, RopeAmplitude amplitude)
    : RopeTable(nullptr, std::move(frequencies), positions, std::move(amplitude)) {}


RopeTable RopeTable::rows(std::vector<double> frequencies, int64_t first, int64_t end) {
    require(first >= 0 && end >= first, [&] {
        return "RoPE: table rows [" + std::to_string(first) + ", " + std::to_string(end) +
               ") must be an interval of non-negative positions";
    });
    return RopeTable(nullptr, std::move(frequencies), end, constant(1.0), first);
}

RopeTable RopeTable::extended(int64_t positions) const {
    require(first_ == 0,
            [&] { return "RoPE: a table of rows from position " + std::to_string(first_) + " does not grow"; });
    return RopeTable(this, frequencies_, std::max(positions, positions_), amplitude_);
}

RopeTable::RopeTable(const RopeTable *prefix, std::vector<double> frequencies, int64_t positions, RopeAmplitude amplitude,
                     int64_t first)
    : frequencies_(std::move(frequencies)), amplitude_(std::move(amplitude)), first_(first), positions_(positions) {
    require(!frequencies_.empty(), "RoPE: a table needs at least one frequency");
    require(static_cast<bool>(amplitude_), "RoPE: a table's amplitude function is empty");
    for (double f : frequencies_) {
        require(std::isfinite(f) && f >= 0,
                [&] { return "RoPE: frequencies must be finite and non-negative, got " + std::to_string(f); });
    }
    require(positions >= 0,
            [&] { return "RoPE: a table needs a non-negative number of positions, got " + std::to_string(positions); });
    const int64_t half = static_cast<int64_t>(frequencies_.size());
    cos_ = Tensor({positions - first, half}, Tensor::unset);
    sin_ = Tensor({positions - first, half}, Tensor::unset);
    const int64_t kept = prefix ? prefix->positions_ : first;
    if (prefix) {
        std::copy(prefix->cos_.values().begin(), prefix->cos_.values().end(), cos_.data());
        std::copy(prefix->sin_.values().begin(), prefix->sin_.values().end(), sin_.data());
    }
    for (int64_t p = kept; p < positions; p++) {
        const double amplitude = amplitude_(p);
        require(std::isfinite(amplitude) && amplitude > 0, [&] {
            return "RoPE: the amplitude at position " + std::to_string(p) + " must be positive, got " +
                   std::to_string(amplitude);
        });
        for (int64_t i = 0; i < half; i++) {
            const double angle = double(p) * frequencies_[i];
            cos_.data()[(p - first) * half + i] = static_cast<float>(amplitude * std::cos(angle));
            sin_.data()[(p - first) * half + i] = static_cast<float>(amplitude * std::sin(angle));
        }
    }
    cos_.keep_on_device(Residency::ReadOnly);
    sin_.keep_on_device(Residency::ReadOnly);
}

GrowingRopeTable::GrowingRopeTable(int64_t rotary_dim, double base)
    : table_(std::make_shared<const RopeTable>(rotary_dim, base, 0)) {}

double rope_amplitude(const RopeScaling &scaling) {
    const bool scaled = scaling.type == RopeScaling::Type::Yarn || scaling.type == RopeScaling::Type::LongRope;
    return scaled ? scaling.attention_factor : 1.0;
}

RopeScaling dynamic_ntk_scaling(const RopeScaling &scaling, int64_t length) {
    RopeScaling call = scaling;
    call.length = double(length);
    return call;
}

RopeScaling long_factor_scaling(const RopeScaling &scaling) {
    RopeScaling long_scaling = scaling;
    long_scaling.long_factors_used = true;
    return long_scaling;
}

GrowingRopeTable::GrowingRopeTable(int64_t rotary_dim, double base, const RopeScaling &scaling)
    : GrowingRopeTable(rope_frequencies(rotary_dim, base, scaling), rope_amplitude(scaling)) {}

GrowingRopeTable::GrowingRopeTable(std::vector<double> frequencies, double amplitude)
    : table_(std::make_shared<const RopeTable>(std::move(frequencies), 0, amplitude)) {}

GrowingRopeTable::GrowingRopeTable(std::vector<double> frequencies, RopeAmplitude amplitude)
    : table_(std::make_shared<const RopeTable>(std::move(frequencies), 0, std::move(amplitude))) {}

GrowingRopeTable::GrowingRopeTable(const GrowingRopeTable &other) : table_(std::atomic_load(&other.table_)) {}

GrowingRopeTable &GrowingRopeTable::operator=(const GrowingRopeTable &other) {
    if (this != &other) std::atomic_store(&table_, std::atomic_load(&other.table_));
    return *this;
}

std::shared_ptr<const RopeTable> GrowingRopeTable::covering(int64_t positions) const {
    std::shared_ptr<const RopeTable> current = std::atomic_load(&table_);
    while (current->positions() < positions) {
        auto grown = std::make_shared<const RopeTable>(current->extended(std::max(positions, 2 * current->positions())));
        // Another thread may have grown it meanwhile: then `current` becomes its table, which is
        // used if it is long enough (a larger table is never replaced by a smaller one).
        if (std::atomic_compare_exchange_strong(&table_, &current, grown)) return grown;
    }
    return current;
}

std::vector<int32_t> RopeTable::rows_for(const std::vector<int32_t> &start, int64_t batch, int64_t count,
                                         int64_t head_dim, const std::string &who) const {
    require(rotary_dim() <= head_dim, [&] {
        return who + ": rotary dimension " + std::to_string(rotary_dim()) + " exceeds head dimension " +
               std::to_string(head_dim);
    });
    require(static_cast<int64_t>(start.size()) == batch, who + ": one start position per sequence");
    std::vector<int32_t> rows(start.size());
    for (size_t b = 0; b < start.size(); b++) {
        require(start[b] >= first_ && start[b] + count <= positions_, [&] {
            return who + ": positions " + std::to_string(start[b]) + " to " + std::to_string(start[b] + count) +
                   " are outside the table's " + std::to_string(first_) + " to " + std::to_string(positions_);
        });
        rows[b] = static_cast<int32_t>(start[b] - first_);
    }
    return rows;
}

void apply_rope(const ConstTensorView &x, const RopeTable &table, const std::vector<int32_t> &start,
                const TensorView &y, RopeLayout layout) {
    require(x.rank() == 4, [&] { return "RoPE: input must be [B, S, H, D], got " + shape_to_string(x.shape); });
    require(y.shape == x.shape, [&] {
        return "RoPE: output " + shape_to_string(y.shape) + " differs from input " + shape_to_string(x.shape);
    });
    std::vector<int32_t> rows = table.rows_for(start, x.dim(0), x.dim(1), x.dim(3), "RoPE");
    if (x.size() == 0) return;
    auto cos_b = detail::halide_buffer(table.cos()), sin_b = detail::halide_buffer(table.sin());
    Halide::Runtime::Buffer<int32_t> start_b(rows.data(), static_cast<int>(rows.size()));
    auto xb = detail::halide_buffer(x), yb = detail::halide_buffer(y);
    if (layout == RopeLayout::NeoX) {
        detail::run_kernel<detail::kernels::rope>(xb.raw_buffer(), cos_b.raw_buffer(), sin_b.raw_buffer(),
                                                  start_b.raw_buffer(), yb.raw_buffer());
    } else {
        detail::run_kernel<detail::kernels::rope_interleaved>(xb.raw_buffer(), cos_b.raw_buffer(), sin_b.raw_buffer(),
                                                              start_b.raw_buffer(), yb.raw_buffer());
    }
}

}  // namespace hattn
