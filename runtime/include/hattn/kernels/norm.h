// Row normalisations as kernels (generators/row_norm.h).
#pragma once

#include "hattn/tensor.h"

namespace hattn {

// y = w * x / sqrt(mean(x^2) + eps) per row of x [rows, n] (x may be a strided view); y [rows, n].
// The weight is [n], or [k, n] whose rows x's rows take in turn (row r: r % k), as each head's own
// weights where x's rows are (token, head); k divides the rows.
void rms_norm(const ConstTensorView &x, const Tensor &weight, float eps, const TensorView &y);

// y = (x - mean) / sqrt(var + eps) * w + b per row; weight and bias each [n] or [k, n] as above.
void layer_norm(const ConstTensorView &x, const Tensor &weight, const Tensor &bias, float eps, const TensorView &y);

}  // namespace hattn
