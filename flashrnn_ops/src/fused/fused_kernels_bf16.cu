#include <cuda_bf16.h>

#include "cells/elman.h"
#include "cells/gru.h"
#include "cells/lstm.h"
#include "cells/slstm.h"
#include "fused/fused_kernels.cuh"

namespace flashrnn::fused {
FLASHRNN_FUSED_INSTANTIATE(__nv_bfloat16)
}
