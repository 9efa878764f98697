// Runs a check under one bf16 dot-product form (hattn/kernel_table.h), then restores the form
// before it, also where the check throws.
#pragma once

#include <functional>

#include "hattn/kernel_table.h"

namespace hattn::testing {

inline double with_bf16_form(Bf16DotForm form, const std::function<double()> &check) {
    struct Restore {
        Bf16DotForm before = bf16_dot_form();
        ~Restore() { set_bf16_dot_form(before); }
    } restore;
    set_bf16_dot_form(form);
    return check();
}

}  // namespace hattn::testing
