#include "alternating/step_kernels.cuh"
namespace flashrnn::alternating {
FLASHRNN_ALTERNATING_INSTANTIATE(float)
}
