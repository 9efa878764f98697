#include "memory_pool.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "HalideRuntime.h"
#include "hattn/error.h"
#include "hattn/memory.h"

namespace hattn::detail {

namespace {

// HATTN_MEMORY_POOL_MB, read once; an invalid value keeps nothing (check_memory_pool_setting()
// reports it at the first kernel call).
struct Budget {
    size_t bytes = size_t(1024) << 20;
    std::string error;
};

const Budget &budget() {
    static const Budget b = [] {
        Budget r;
        const char *text = std::getenv("HATTN_MEMORY_POOL_MB");
        if (!text || !*text) return r;
        char *end = nullptr;
        const unsigned long long mb = std::strtoull(text, &end, 10);
        if (*end != '\0' || text[0] == '-' || mb > (size_t(1) << 24)) {
            r.error = std::string("HATTN_MEMORY_POOL_MB: expected a number of MiB, got '") + text + "'";
            r.bytes = 0;
        } else {
            r.bytes = static_cast<size_t>(mb) << 20;
        }
        return r;
    }();
    return b;
}

// A raw block for Halide: malloc'ed with room to align the payload to `align` bytes, and a header
// just before the payload that holds the block's capacity and what malloc returned. The tail pad
// lets generated code read a few bytes past the end. (aligned_alloc made the many small scratch
// allocations of a prefill 8x slower.)
constexpr size_t align = 128, tail = 64;

struct Header {
    void *base;
    size_t capacity;
};

struct Block {
    void *payload;
    size_t capacity;
};

// Kept blocks and tensor storage share one budget. Blocks leave in the order they came (oldest
// first) when the budget is exceeded. Never destroyed: Halide may free scratch during exit.
struct Pool {
    std::mutex mutex;
    std::vector<Block> blocks;
    std::vector<std::vector<float>> floats;
    size_t bytes = 0;
};

Pool &pool() {
    static Pool *p = new Pool;
    return *p;
}

Header &header(void *payload) { return *(static_cast<Header *>(payload) - 1); }

void *allocate_block(size_t capacity) {
    char *base = static_cast<char *>(std::malloc(sizeof(Header) + align + capacity + tail));
    if (!base) return nullptr;
    const uintptr_t first = reinterpret_cast<uintptr_t>(base) + sizeof(Header);
    void *payload = reinterpret_cast<void *>((first + align - 1) / align * align);
    header(payload) = {base, capacity};
    return payload;
}

void free_block(void *payload) { std::free(header(payload).base); }

// Kept items at most (the searches are linear).
constexpr size_t max_kept = 256;

// Makes room for `incoming` bytes within the budget by freeing the oldest kept storage; returns
// whether it fits at all. Called with the pool locked; what it frees is handed back to free.
bool make_room(Pool &p, size_t incoming, std::vector<Block> &drop_blocks,
               std::vector<std::vector<float>> &drop_floats) {
    const size_t limit = budget().bytes;
    if (incoming > limit) return false;
    while (p.bytes + incoming > limit || p.blocks.size() + p.floats.size() >= max_kept) {
        if (!p.blocks.empty()) {
            p.bytes -= p.blocks.front().capacity;
            drop_blocks.push_back(p.blocks.front());
            p.blocks.erase(p.blocks.begin());
        } else {
            p.bytes -= p.floats.front().capacity() * sizeof(float);
            drop_floats.push_back(std::move(p.floats.front()));
            p.floats.erase(p.floats.begin());
        }
    }
    return true;
}

// The smallest kept item of at least `bytes` and at most twice that (a much larger one would hold
// memory the request does not use), or -1.
template <typename Items, typename Size>
int best_fit(const Items &items, size_t bytes, Size size_of) {
    int best = -1;
    for (size_t i = 0; i < items.size(); i++) {
        const size_t s = size_of(items[i]);
        if (s >= bytes && s <= 2 * bytes && (best < 0 || s < size_of(items[best]))) best = static_cast<int>(i);
    }
    return best;
}

}  // namespace

void check_memory_pool_setting() { require(budget().error.empty(), budget().error); }

void *pooled_halide_malloc(void *, size_t bytes) {
    if (bytes >= pooled_min_bytes) {
        Pool &p = pool();
        std::lock_guard<std::mutex> lock(p.mutex);
        const int i = best_fit(p.blocks, bytes, [](const Block &b) { return b.capacity; });
        if (i >= 0) {
            const Block b = p.blocks[i];
            p.blocks.erase(p.blocks.begin() + i);
            p.bytes -= b.capacity;
            return b.payload;
        }
    }
    return allocate_block(bytes);
}

void pooled_halide_free(void *, void *payload) {
    if (!payload) return;
    const size_t capacity = header(payload).capacity;
    std::vector<Block> drop_blocks;
    std::vector<std::vector<float>> drop_floats;
    bool kept = false;
    if (capacity >= pooled_min_bytes) {
        Pool &p = pool();
        std::lock_guard<std::mutex> lock(p.mutex);
        if (make_room(p, capacity, drop_blocks, drop_floats)) {
            p.blocks.push_back({payload, capacity});
            p.bytes += capacity;
            kept = true;
        }
    }
    if (!kept) free_block(payload);
    for (const Block &b : drop_blocks) free_block(b.payload);
}

std::vector<float> take_floats(size_t n, bool zeroed) {
    std::vector<float> v;
    if (n * sizeof(float) >= pooled_min_bytes) {
        Pool &p = pool();
        std::lock_guard<std::mutex> lock(p.mutex);
        const int i = best_fit(p.floats, n * sizeof(float),
                               [](const std::vector<float> &f) { return f.capacity() * sizeof(float); });
        if (i >= 0) {
            v = std::move(p.floats[i]);
            p.floats.erase(p.floats.begin() + i);
            p.bytes -= v.capacity() * sizeof(float);
        }
    }
    if (zeroed) {
        v.assign(n, 0.0f);
    } else {
        v.resize(n);  // writes only elements past the kept size
    }
    return v;
}

void give_floats(std::vector<float> &&values) {
    const size_t bytes = values.capacity() * sizeof(float);
    if (bytes < pooled_min_bytes) return;
    std::vector<Block> drop_blocks;
    std::vector<std::vector<float>> drop_floats;
    {
        Pool &p = pool();
        std::lock_guard<std::mutex> lock(p.mutex);
        if (!make_room(p, bytes, drop_blocks, drop_floats)) return;
        p.floats.push_back(std::move(values));
        p.bytes += bytes;
    }
    for (const Block &b : drop_blocks) free_block(b.payload);
}

}  // namespace hattn::detail

namespace hattn {

size_t pooled_memory_bytes() {
    detail::Pool &p = detail::pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    return p.bytes;
}

void release_pooled_memory() {
    std::vector<detail::Block> blocks;
    std::vector<std::vector<float>> floats;
    {
        detail::Pool &p = detail::pool();
        std::lock_guard<std::mutex> lock(p.mutex);
        blocks.swap(p.blocks);
        floats.swap(p.floats);
        p.bytes = 0;
    }
    for (const detail::Block &b : blocks) detail::free_block(b.payload);
}

}  // namespace hattn
