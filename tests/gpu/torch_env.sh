# Sourced by the GPU-machine scripts that run prebuilt binaries: puts the torch
# wheel of this machine's python3 (or $FLASHTRAIN_PYTHON) and CUDA on the
# library path, so binaries built elsewhere against the same wheel start.
#   source tests/gpu/torch_env.sh
FLASHTRAIN_TORCH_LIB="$("${FLASHTRAIN_PYTHON:-python3}" -c 'import torch, os; print(os.path.dirname(torch.__file__))')/lib"
export LD_LIBRARY_PATH="$FLASHTRAIN_TORCH_LIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
