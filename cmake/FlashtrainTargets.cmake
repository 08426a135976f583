# Settings every flashtrain target shares, and the one precompiled header.

# flashtrain_common: compile options and libraries of every C++/CUDA target.
# Keeping them identical across targets is what lets them reuse one PCH.
add_library(flashtrain_common INTERFACE)
target_link_libraries(flashtrain_common INTERFACE ${TORCH_LIBRARIES})
target_compile_options(flashtrain_common INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
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

# The same header precompiled as position-independent code, for the shared
# objects (flashrnn_ops and the Python extension, python/): their C++ files
# compile with -fPIC and reuse this one.
add_library(flashtrain_pch_pic STATIC "${PROJECT_SOURCE_DIR}/cmake/pch/pch.cpp")
target_link_libraries(flashtrain_pch_pic PUBLIC flashtrain_common)
set_target_properties(flashtrain_pch_pic PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_precompile_headers(flashtrain_pch_pic PRIVATE
  "$<$<COMPILE_LANGUAGE:CXX>:${PROJECT_SOURCE_DIR}/cmake/pch/torch_pch.h>")

function(flashtrain_use_pch_pic target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fPIC>)
  target_precompile_headers(${target} REUSE_FROM flashtrain_pch_pic)
endfunction()
