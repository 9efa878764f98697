// Rows of values held in a storage type (spec/attention.md section 5), for a state that keeps its
// own rows (the DSA state): sequences of `rows` rows of `width` values, [batch, rows, width], held
// several values to a float32 word, each row padded to whole words, so that moving rows copies
// words and never looks inside one. int8 rows keep a float32 scale per group of `group` values.
#pragma once

#include <cstdint>

#include "hattn/dtype.h"
#include "hattn/tensor.h"

namespace hattn {

class StoredRows {
public:
    StoredRows(DType dtype, int64_t batch, int64_t rows, int64_t width, int64_t group = 0);

    DType dtype() const { return dtype_; }
    int64_t width() const { return width_; }
    // [batch, rows, width]; an int8 view's scales [batch, rows, groups] (scale_group = group).
    StoredView view() const;
    // The stored bytes of one row: its values and scales, without the padding.
    int64_t bytes_per_row() const { return bytes_per_row(dtype_, width_, group_); }
    static int64_t bytes_per_row(DType dtype, int64_t width, int64_t group = 0);

    // Sequence b's rows [first, first + n) take rows_of_b [n, width], rounded: on the host, where
    // rows a GPU kernel wrote come down first and the stored rows go up before a kernel reads them
    // (float32 rows are copied, on a GPU there).
    void store(int64_t b, int64_t first, const ConstTensorView &rows_of_b);
    // Sequence `target`'s first n rows become those of sequence `source` of `from` (the same type
    // and width).
    void copy_rows(int64_t target, const StoredRows &from, int64_t source, int64_t n);

private:
    DType dtype_;
    int64_t width_, group_;
    int64_t stride_;       // elements a row, the padding included
    Tensor words_;         // [batch, rows, words a row]
    Tensor scales_;        // int8: [batch, rows, groups]
};

}  // namespace hattn
