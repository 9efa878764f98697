#include "memory_pool.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "HalideRuntime.h"
#include "hattn/error.h"
#include "hattn/memory.h"

namespace hattn::detail {

namespace {

// HATTN_MEMORY_POOL_MB, read once; an invalid value keeps nothing (check_memory_pool_setting()
// reports it at the first kernel call). Never destroyed, like the pool: tensors in static storage
// give their memory back during exit.
struct Settings {
    size_t budget = size_t(1024) << 20;
    std::string error;
    bool poison_unset = false;  // HATTN_POISON_UNSET=1: unset tensors start as NaN (a test switch)
};

const Settings &settings() {
    static const Settings *s = [] {
        auto *r = new Settings;
        const char *poison = std::getenv("HATTN_POISON_UNSET");
        r->poison_unset = poison && std::string(poison) == "1";
        const char *text = std::getenv("HATTN_MEMORY_POOL_MB");
        if (!text || !*text) return r;
        char *end = nullptr;
        const unsigned long long mb = std::strtoull(text, &end, 10);
        if (*end != '\0' || text[0] == '-' || mb > (size_t(1) << 24)) {
            r->error = std::string("HATTN_MEMORY_POOL_MB: expected a number of MiB, got '") + text + "'";
            r->budget = 0;
        } else {
            r->budget = static_cast<size_t>(mb) << 20;
        }
        return r;
    }();
    return *s;
}

// A raw block for Halide: malloc'ed with room to align the payload to `align` bytes, and a header
// just before the payload that holds the block's capacity, what malloc returned and a mark that
// says the block is ours (an application's own Halide pipelines share the runtime and may free
// blocks from the default allocator through these hooks). The tail pad lets generated code read a
// few bytes past the end. (aligned_alloc made the many small scratch blocks of a prefill 8x slower.)
constexpr size_t align = 128, tail = 64;
constexpr uint64_t ours = 0x68617474'6e706f6fULL;

// The mark comes last: on a block from Halide's default allocator it reads the word just before
// the payload, where that allocator keeps malloc's pointer (so the read stays inside the block),
// and the mark, not a canonical address, never equals such a pointer.
struct Header {
    void *base;
    size_t capacity;
    uint64_t mark;
};

struct Block {
    void *payload;
    size_t capacity;
};

// Kept items at most (the searches are linear). The lists are reserved to it once, so keeping a
// block never allocates (the hooks and ~Tensor must not throw).
constexpr size_t max_kept = 256;

// Kept blocks and tensor storage share one budget. When it is exceeded, Halide blocks leave first,
// then tensor storage, each oldest first. Never destroyed: Halide may free scratch during exit.
struct Pool {
    Pool() {
        blocks.reserve(max_kept);
        floats.reserve(max_kept);
    }
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
    header(payload) = {base, capacity, ours};
    return payload;
}

void free_block(void *payload) noexcept { std::free(header(payload).base); }

size_t block_bytes(const Block &b) { return b.capacity; }
size_t floats_bytes(const std::vector<float> &f) { return f.capacity() * sizeof(float); }

// Makes room for `incoming` bytes within the budget and the item limit, freeing what leaves (with
// the pool locked; eviction is rare). Returns whether `incoming` can be kept at all.
bool make_room(Pool &p, size_t incoming) noexcept {
    if (incoming > settings().budget) return false;
    while ((p.bytes + incoming > settings().budget || p.blocks.size() + p.floats.size() >= max_kept) &&
           !(p.blocks.empty() && p.floats.empty())) {
        if (!p.blocks.empty()) {
            p.bytes -= block_bytes(p.blocks.front());
            free_block(p.blocks.front().payload);
            p.blocks.erase(p.blocks.begin());
        } else {
            p.bytes -= floats_bytes(p.floats.front());
            p.floats.erase(p.floats.begin());
        }
    }
    return true;
}

// Takes the smallest kept item of at least `bytes` and at most twice that (a much larger one would
// hold memory the request does not use) out of `items`, if there is one.
template <typename Item, typename Size>
std::optional<Item> take_fitting(std::vector<Item> &items, size_t bytes, Size size_of) {
    Pool &p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    int best = -1;
    for (size_t i = 0; i < items.size(); i++) {
        const size_t s = size_of(items[i]);
        if (s >= bytes && s <= 2 * bytes && (best < 0 || s < size_of(items[best]))) best = static_cast<int>(i);
    }
    if (best < 0) return std::nullopt;
    Item item = std::move(items[best]);
    items.erase(items.begin() + best);
    p.bytes -= size_of(item);
    return item;
}

}  // namespace

void check_memory_pool_setting() { require(settings().error.empty(), settings().error); }

void *pooled_halide_malloc(void *, size_t bytes) noexcept {
    if (bytes >= pooled_min_bytes) {
        if (const auto kept = take_fitting(pool().blocks, bytes, block_bytes)) return kept->payload;
    }
    return allocate_block(bytes);
}

void pooled_halide_free(void *user_context, void *payload) noexcept {
    if (!payload) return;
    if (header(payload).mark != ours) {
        halide_default_free(user_context, payload);
        return;
    }
    const size_t capacity = header(payload).capacity;
    if (capacity >= pooled_min_bytes) {
        Pool &p = pool();
        std::lock_guard<std::mutex> lock(p.mutex);
        if (make_room(p, capacity)) {
            p.blocks.push_back({payload, capacity});
            p.bytes += capacity;
            return;
        }
    }
    free_block(payload);
}

std::vector<float> take_floats(size_t n, bool zeroed) {
    std::vector<float> v;
    if (n * sizeof(float) >= pooled_min_bytes) {
        if (auto kept = take_fitting(pool().floats, n * sizeof(float), floats_bytes)) v = std::move(*kept);
    }
    if (zeroed) {
        v.assign(n, 0.0f);
    } else if (settings().poison_unset) {
        v.assign(n, std::numeric_limits<float>::quiet_NaN());
    } else {
        v.resize(n);  // writes only elements past the kept size
    }
    return v;
}

void give_floats(std::vector<float> &&values) noexcept {
    const size_t bytes = floats_bytes(values);
    if (bytes < pooled_min_bytes) return;
    Pool &p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!make_room(p, bytes)) return;
    p.floats.push_back(std::move(values));
    p.bytes += bytes;
}

}  // namespace hattn::detail

namespace hattn {

size_t pooled_memory_bytes() {
    detail::Pool &p = detail::pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    return p.bytes;
}

void release_pooled_memory() {
    detail::Pool &p = detail::pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    for (const detail::Block &b : p.blocks) detail::free_block(b.payload);
    p.blocks.clear();
    p.floats.clear();
    p.bytes = 0;
}

}  // namespace hattn
