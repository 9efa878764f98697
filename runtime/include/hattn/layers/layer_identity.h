#pragma once
// Which layer object made a state. A state holds its layer's cache rows and, for the latent
// layer, its first delayed value: read by another layer it gives wrong results, silently where
// the shapes agree. Each layer takes a number unique in the process when it is constructed, and
// its states record it; copies of a layer keep the number, as they hold the same weights.

#include <cstdint>

namespace hattn {

class LayerIdentity {
public:
    LayerIdentity();  // a number no other layer of this process has

    bool operator==(const LayerIdentity &other) const { return value_ == other.value_; }
    bool operator!=(const LayerIdentity &other) const { return value_ != other.value_; }

private:
    uint64_t value_;
};

}  // namespace hattn
