// Memory hattn keeps for reuse between calls.
//
// Tensors and kernel scratch of 64 KiB or more are not returned to the system when freed: the next
// call of the same shape takes them again instead of page-faulting fresh memory in (which cost an
// mha layer prefill a third of its time). At most HATTN_MEMORY_POOL_MB (default 1024) MiB are kept;
// 0 keeps nothing.
#pragma once

#include <cstddef>

namespace hattn {

// Bytes kept for reuse right now.
size_t pooled_memory_bytes();

// Returns every kept block to the system (for an application between phases of its work).
void release_pooled_memory();

}  // namespace hattn
