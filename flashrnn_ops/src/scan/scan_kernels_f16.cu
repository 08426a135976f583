// The scan kernels for storage type __half (both layouts, forward and backward).
#include "scan_launch_typed.cuh"

namespace flashrnn::scan_kernels {

template cudaError_t launch_scan_forward_typed<__half>(const ScanForwardParams&, void*, cudaStream_t);
template cudaError_t launch_scan_backward_typed<__half>(const ScanBackwardParams&, void*,
                                                    cudaStream_t);

}  // namespace flashrnn::scan_kernels
