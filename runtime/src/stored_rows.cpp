#include "hattn/stored_rows.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "device_residency.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/int8_group.h"

namespace hattn {

using detail::host_reads;
using detail::host_wrote;

namespace {

int64_t per_word(DType dtype) { return int64_t(sizeof(float)) / int64_t(dtype_size(dtype)); }
int64_t groups_of(int64_t width, int64_t group) { return (width + group - 1) / group; }

}  // namespace

StoredRows::StoredRows(DType dtype, int64_t batch, int64_t rows, int64_t width, int64_t group)
    : dtype_(dtype),
      width_(width),
      group_(dtype == DType::Int8 ? group : 0),
      stride_((width + per_word(dtype) - 1) / per_word(dtype) * per_word(dtype)),
      words_({batch, rows, stride_ / per_word(dtype)}) {
    require(dtype != DType::Int8 || group > 0, "stored rows: int8 rows need a group size");
    if (dtype == DType::Int8) scales_ = Tensor({batch, rows, groups_of(width, group_)});
    // On a GPU the kernels read the rows where they stay: a store uploads only its rows.
    words_.keep_on_device();
    if (dtype == DType::Int8) scales_.keep_on_device();
}

StoredView StoredRows::view() const {
    const int64_t B = words_.dim(0), R = words_.dim(1);
    StoredView v(words_.data(), dtype_, {B, R, width_}, {R * stride_, stride_, 1});
    if (dtype_ == DType::Int8) {
        v.scales = scales_.view();
        v.scale_group = group_;
    }
    return v;
}

int64_t StoredRows::bytes_per_row(DType dtype, int64_t width, int64_t group) {
    const int64_t scales = dtype == DType::Int8 ? groups_of(width, group) * int64_t(sizeof(float)) : 0;
    return width * int64_t(dtype_size(dtype)) + scales;
}

void StoredRows::store(int64_t b, int64_t first, const ConstTensorView &rows_of_b) {
    require(rows_of_b.rank() == 2 && rows_of_b.dim(1) == width_ && first >= 0 &&
                first + rows_of_b.dim(0) <= words_.dim(1),
            "stored rows: the rows do not fit");
    const int64_t n = rows_of_b.dim(0);
    if (dtype_ == DType::F32) {  // a copy, which on a GPU stays there
        copy_into(rows_of_b, TensorView(words_.data() + (b * words_.dim(1) + first) * stride_, {n, width_}, {stride_, 1}));
        return;
    }
    const Shape steps = rows_of_b.strides.empty() ? Shape{width_, 1} : rows_of_b.strides;
    host_reads(rows_of_b);
    const auto rows_of = [&](const Tensor &t) { return t.view().crop(0, b, b + 1).crop(1, first, first + n); };
    host_wrote(rows_of(words_));
    if (dtype_ == DType::Int8) host_wrote(rows_of(scales_));
    const int64_t groups = dtype_ == DType::Int8 ? scales_.dim(2) : 0;
    std::vector<float> row(width_);
    for (int64_t r = 0; r < n; r++) {
        for (int64_t i = 0; i < width_; i++) row[i] = rows_of_b.data[r * steps[0] + i * steps[1]];
        const int64_t at = (b * words_.dim(1) + first + r) * stride_;  // the row's first element
        if (dtype_ == DType::Int8) {
            int8_t *codes = reinterpret_cast<int8_t *>(words_.data()) + at;
            float *scales = scales_.data() + (b * words_.dim(1) + first + r) * groups;
            for (int64_t g = 0; g < groups; g++) {
                const int64_t from = g * group_;
                scales[g] = quantize_group(row.data() + from, codes + from, std::min(group_, width_ - from));
            }
        } else {
            to_bits(dtype_, row.data(), reinterpret_cast<uint16_t *>(words_.data()) + at, width_);
        }
    }
}

void StoredRows::copy_rows(int64_t target, const StoredRows &from, int64_t source, int64_t n) {
    for (auto [to, rows] : {std::pair<Tensor *, const Tensor *>{&words_, &from.words_}, {&scales_, &from.scales_}}) {
        if (to->size() == 0) continue;
        const int64_t width = to->dim(2), at = target * to->dim(1) * width;
        std::copy_n(rows->data() + source * rows->dim(1) * width, n * width, to->data() + at);
        to->host_changed(at, at + n * width);
    }
}

}  // namespace hattn
