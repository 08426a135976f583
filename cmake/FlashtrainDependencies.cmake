# Finds every external dependency. libtorch comes from a python that has torch
# installed: the project's .venv (made by scripts/setup.sh) or FLASHTRAIN_PYTHON
# (the GPU machine's python3).

set(FLASHTRAIN_PYTHON "" CACHE FILEPATH "python whose torch package provides libtorch")
if(NOT FLASHTRAIN_PYTHON)
  if(EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    set(FLASHTRAIN_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  else()
    find_program(FLASHTRAIN_PYTHON NAMES python3 python REQUIRED)
  endif()
endif()

execute_process(
  COMMAND "${FLASHTRAIN_PYTHON}" -c "import torch; print(torch.utils.cmake_prefix_path); print(torch.__version__)"
  OUTPUT_VARIABLE _torch_query
  ERROR_VARIABLE _torch_error
  RESULT_VARIABLE _torch_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _torch_rc EQUAL 0)
  message(FATAL_ERROR
    "flashtrain needs libtorch from a python with torch installed, but "
    "'${FLASHTRAIN_PYTHON} -c \"import torch\"' failed:\n${_torch_error}\n"
    "Run scripts/setup.sh, or pass -DFLASHTRAIN_PYTHON=/path/to/python3.")
endif()
string(REPLACE "\n" ";" _torch_query "${_torch_query}")
list(GET _torch_query 0 _torch_prefix)
list(GET _torch_query 1 FLASHTRAIN_TORCH_VERSION)
list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
message(STATUS "libtorch ${FLASHTRAIN_TORCH_VERSION} from ${FLASHTRAIN_PYTHON}")

# Torch sets CMAKE_CUDA_ARCHITECTURES to OFF (with a warning) and adds the
# -gencode flags of TORCH_CUDA_ARCH_LIST itself.
find_package(Torch REQUIRED)
find_package(CUDAToolkit REQUIRED)
find_package(GTest REQUIRED)
