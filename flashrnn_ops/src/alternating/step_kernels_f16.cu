#include <cuda_fp16.h>

#include "alternating/step_kernels.cuh"
namespace flashrnn::alternating {
FLASHRNN_ALTERNATING_INSTANTIATE(__half)
}
