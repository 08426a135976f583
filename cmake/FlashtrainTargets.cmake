# Settings every flashtrain target shares, and the one precompiled header.

# flashtrain_common: compile options and libraries of every C++/CUDA target.
# Keeping them identical across targets is what lets them reuse one PCH: every
# C++ file compiles as position-independent code (the shared objects, the
# kernels' library and the Python extension, need it; the rest lose nothing).
add_library(flashtrain_common INTERFACE)
target_link_libraries(flashtrain_common INTERFACE ${TORCH_LIBRARIES})
target_compile_options(flashtrain_common INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-fPIC -Wall -Wextra -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)

# torch/torch.h costs ~20 s per translation unit to parse; compile it once and
# let every C++ target reuse it (targets call flashtrain_use_pch).
add_library(flashtrain_pch STATIC "${PROJECT_SOURCE_DIR}/cmake/pch/pch.cpp")
target_link_libraries(flashtrain_pch PUBLIC flashtrain_common)
target_precompile_headers(flashtrain_pch PRIVATE
  "$<$<COMPILE_LANGUAGE:CXX>:${PROJECT_SOURCE_DIR}/cmake/pch/torch_pch.h>")

function(flashtrain_use_pch target)
  target_precompile_headers(${target} REUSE_FROM flashtrain_pch)
endfunction()

