#include "generators/round_values.h"

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void RoundValues::generate() {
    _halide_user_assert(to == StorageType::BF16 || to == StorageType::F16) << "round_values: `to` is bf16 or f16";
    const auto u = [](uint32_t v) { return Internal::make_const(UInt(32), uint64_t(v)); };
    const Expr x = in(i);
    const Expr bits = reinterpret<uint32_t>(x);
    const Expr sign = bits & u(0x80000000), a = bits & u(0x7fffffff);
    const Expr nan = a > u(0x7f800000);  // stays NaN (the layers' finiteness checks see it)
    if (to == StorageType::BF16) {
        // Adding half a unit less one, plus the kept part's lowest bit, rounds ties to even.
        out(i) = select(nan, x, reinterpret<float>((bits + u(0x7fff) + ((bits >> 16) & u(1))) & u(0xffff0000)));
        return;
    }
    if (schedules::f16_converted_natively(get_target())) {
        // The conversion rounds ties to even and makes subnormal halves; clamped first, so that
        // values past the range give 65504, never inf.
        out(i) = select(nan, x, cast<float>(cast(Float(16), clamp(x, -65504.0f, 65504.0f))));
        return;
    }
    // A normal half keeps 10 of float32's 23 mantissa bits (a carry moves into the exponent).
    const Expr normal = (a + u(0xfff) + ((a >> 13) & u(1))) & u(0xffffe000);
    // Below 2^-14 a half is a multiple of 2^-24: the mantissa with its leading bit, m * 2^(e - 150),
    // shifted right by 126 - e with the same rounding (25 places or more leave 0).
    const Expr m = (a & u(0x7fffff)) | u(0x800000);
    const Expr shift = cast<uint32_t>(clamp(126 - cast<int32_t>(a >> 23), 14, 25));
    const Expr units = (m + ((cast<uint32_t>(1) << (shift - 1)) - 1) + ((m >> shift) & 1)) >> shift;
    const Expr subnormal = reinterpret<uint32_t>(cast<float>(units) * 0x1p-24f);
    const Expr rounded = select(a >= u(0x477ff000), u(0x477fe000),  // 65520 and past: 65504, never inf
                                a < u(0x38800000), subnormal, normal);
    out(i) = select(nan, x, reinterpret<float>(sign | rounded));
}

void RoundValues::schedule() {
    in.set_estimates({{0, 1 << 22}});  // a 2048-token layer's q of 2048 values
    out.set_estimates({{0, 1 << 22}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::RoundValues, round_values)
