#include <cuda_runtime.h>

#include "cells/elman.h"
#include "cells/gru.h"
#include "cells/lstm.h"
#include "cells/slstm.h"
#include "fused/fused_kernels.cuh"

namespace flashrnn::fused {
FLASHRNN_FUSED_INSTANTIATE(float)
}
