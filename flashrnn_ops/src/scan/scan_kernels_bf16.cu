// The scan kernels for storage type __nv_bfloat16 (both layouts, forward and backward).
#include "scan/scan_launch_typed.cuh"

namespace flashrnn::scan_kernels {

using Storage = __nv_bfloat16;
template cudaError_t launch_scan_forward_typed<Storage>(const ScanForwardParams&, void*,
                                                        cudaStream_t);
template cudaError_t launch_scan_backward_typed<Storage>(const ScanBackwardParams&, void*,
                                                         cudaStream_t);
template cudaError_t scan_resident_blocks_typed<Storage>(const ScanShape&, bool, int&);

}  // namespace flashrnn::scan_kernels
