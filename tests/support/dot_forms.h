// Runs a check under one dot-product form (hattn/kernel_table.h: bf16 or integer), then restores
// the form before it, also where the check throws.
#pragma once

#include <functional>

#include "hattn/kernel_table.h"

namespace hattn::testing {

template <typename Form>
double with_form(void (*set)(Form), Form (*get)(), Form form, const std::function<double()> &check) {
    struct Restore {
        void (*set)(Form);
        Form before;
        ~Restore() { set(before); }
    } restore{set, get()};
    set(form);
    return check();
}

inline double with_bf16_form(Bf16DotForm form, const std::function<double()> &check) {
    return with_form(set_bf16_dot_form, bf16_dot_form, form, check);
}

inline double with_integer_form(IntegerDotForm form, const std::function<double()> &check) {
    return with_form(set_integer_dot_form, integer_dot_form, form, check);
}

}  // namespace hattn::testing
