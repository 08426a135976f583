#include <cuda_runtime.h>

#include "cells/all.h"
#include "fused/fused_kernels.cuh"

namespace flashrnn::fused {
FLASHRNN_FUSED_INSTANTIATE(float)
}
