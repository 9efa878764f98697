// HATTN_SCHEDULED(G): declares generator hattn::G's schedule in each family, one
// `void schedule(G &, const Halide::Target &)` in schedules/x86/, arm/ and gpu/, which
// schedules::apply() calls. One line in the generator's header, after its class, at file scope.
#pragma once

#include "Halide.h"

#define HATTN_SCHEDULED(G)                                     \
    namespace hattn::schedules {                               \
    namespace x86 {                                            \
    void schedule(::hattn::G &g, const Halide::Target &t);     \
    }                                                          \
    namespace arm {                                            \
    void schedule(::hattn::G &g, const Halide::Target &t);     \
    }                                                          \
    namespace gpu {                                            \
    void schedule(::hattn::G &g, const Halide::Target &t);     \
    }                                                          \
    }
