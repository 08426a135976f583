#include <cuda_bf16.h>

#include "alternating/step_kernels.cuh"
namespace flashrnn::alternating {
FLASHRNN_ALTERNATING_INSTANTIATE(__nv_bfloat16)
}
