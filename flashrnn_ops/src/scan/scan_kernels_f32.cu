// The scan kernels for storage type float (both layouts, forward and backward).
#include "scan_launch_typed.cuh"

namespace flashrnn::scan_kernels {

template cudaError_t launch_scan_forward_typed<float>(const ScanForwardParams&, void*, cudaStream_t);
template cudaError_t launch_scan_backward_typed<float>(const ScanBackwardParams&, void*,
                                                    cudaStream_t);

}  // namespace flashrnn::scan_kernels
