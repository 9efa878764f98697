#include "hattn/layers/layer_identity.h"

#include <atomic>

namespace hattn {

LayerIdentity::LayerIdentity() {
    static std::atomic<uint64_t> next{1};  // layers may be built on several threads at once
    value_ = next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace hattn
