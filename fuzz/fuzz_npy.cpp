// Fuzzes the .npy reader: each input is written as x.npy and read with read_npy (header dict,
// dtype, shape, and the data's length and values for every readable dtype).
// Bad input must be a hattn::Error; anything else (another exception, a crash, a leak) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "hattn/error.h"
#include "hattn/npy.h"
#include "support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const std::string path = fuzz::temp_path("x.npy");
    fuzz::write_file(path, data, size);
    try {
        const hattn::NpyArray array = hattn::read_npy(path);
        // npy.h's promises, which callers index by: the vector of its type holds every element, and
        // booleans are 0 or 1. A broken one traps (a finding).
        const size_t count = size_t(hattn::element_count(array.shape));
        const size_t held = array.type == hattn::NpyArray::Type::F32    ? array.f32.size()
                            : array.type == hattn::NpyArray::Type::Bool ? array.boolean.size()
                                                                         : array.integers.size();
        if (held != count) __builtin_trap();
        for (uint8_t value : array.boolean) {
            if (value > 1) __builtin_trap();
        }
        fuzz::note([&] {
            return std::string("read: ") + hattn::npy_type_name(array.type) + " " + hattn::shape_to_string(array.shape);
        });
    } catch (const hattn::Error &e) {
        fuzz::note([&] { return std::string("refused: ") + e.what(); });
    }
    return 0;
}
