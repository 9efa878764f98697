// Runs a check under one bf16 dot-product form (hattn/kernel_table.h), then restores the default.
#pragma once

#include <functional>

#include "hattn/kernel_table.h"

namespace hattn::testing {

inline double with_bf16_form(Bf16DotForm form, const std::function<double()> &check) {
    set_bf16_dot_form(form);
    const double error = check();
    set_bf16_dot_form(Bf16DotForm::Auto);
    return error;
}

}  // namespace hattn::testing
