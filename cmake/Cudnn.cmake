# cuDNN's fused attention as a softmax_kv implementation (mechanisms/softmax_kv/cudnn_sdpa*.cpp).
# Compile time needs two header sets: cudnn.h (the CUDA install's cuDNN 9) and the header-only
# cudnn-frontend, which scripts/fetch-cudnn-frontend.sh unpacks from its PyPI wheel into
# <build>/_deps/cudnn-frontend (never vendored, never downloaded here: CMake only looks). Nothing is
# linked: the frontend's dynamic-loading mode resolves cuDNN through the handle arch-bench dlopens at
# run time (mechanisms/common/cudnn_library.cpp), so the binary starts where libcudnn is absent.
#
# In:  ARCH_BENCH_HAVE_CUDA, ARCH_BENCH_CORE_SOURCES (the cudnn_sdpa sources already filtered out)
# Out: ARCH_BENCH_HAVE_CUDNN, CUDNN_FRONTEND_INCLUDE_DIR, CUDNN_INCLUDE_DIR; the sources appended.
option(ARCH_BENCH_CUDNN "Build softmax_kv's cuDNN fused-attention variant when CUDA and the headers are found" ON)
set(ARCH_BENCH_HAVE_CUDNN OFF)
set(ARCH_BENCH_CUDNN_SOURCES
  ${PROJECT_SOURCE_DIR}/mechanisms/softmax_kv/cudnn_sdpa.cpp
  ${PROJECT_SOURCE_DIR}/mechanisms/softmax_kv/cudnn_sdpa_cells.cpp
  ${PROJECT_SOURCE_DIR}/mechanisms/softmax_kv/cudnn_sdpa_conformance.cpp)
if(ARCH_BENCH_CUDNN AND ARCH_BENCH_HAVE_CUDA)
  find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
            HINTS ${PROJECT_BINARY_DIR}/_deps/cudnn-frontend/include ENV ARCH_BENCH_CUDNN_FRONTEND_INCLUDE
            NO_DEFAULT_PATH)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_TARGET_DIR}/include)
  if(CUDNN_FRONTEND_INCLUDE_DIR AND CUDNN_INCLUDE_DIR)
    set(ARCH_BENCH_HAVE_CUDNN ON)
    list(APPEND ARCH_BENCH_CORE_SOURCES ${ARCH_BENCH_CUDNN_SOURCES})
    message(STATUS "arch-bench: cuDNN variant ON (cudnn-frontend ${CUDNN_FRONTEND_INCLUDE_DIR}, cudnn.h ${CUDNN_INCLUDE_DIR})")
  else()
    message(STATUS "arch-bench: cuDNN variant OFF (cudnn-frontend headers: ${CUDNN_FRONTEND_INCLUDE_DIR}, cudnn.h: "
                   "${CUDNN_INCLUDE_DIR}; run scripts/fetch-cudnn-frontend.sh ${PROJECT_BINARY_DIR} and re-configure)")
  endif()
else()
  message(STATUS "arch-bench: cuDNN variant OFF (needs ARCH_BENCH_CUDNN and the CUDA backend)")
endif()

# After arch_bench_core exists: the definition every file sees (list, preflight, the tests ask
# cudnn_built()), and the frontend's headers for its sources only, as system headers (their
# warnings are not ours).
function(arch_bench_configure_cudnn)
  if(NOT ARCH_BENCH_HAVE_CUDNN)
    return()
  endif()
  target_compile_definitions(arch_bench_cxx_base INTERFACE ARCH_BENCH_HAVE_CUDNN=1)
  # C++ files only: the .cu files need neither, and nvcc's form of the flag (-isystem=<path>) is one
  # ccache cannot make relative, so on nvcc's command lines the build folder's path would make every
  # .cu object miss the cache in each new clone.
  target_include_directories(arch_bench_core SYSTEM PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${CUDNN_FRONTEND_INCLUDE_DIR}>
                             $<$<COMPILE_LANGUAGE:CXX>:${CUDNN_INCLUDE_DIR}>)
  set_source_files_properties(${ARCH_BENCH_CUDNN_SOURCES} PROPERTIES
    COMPILE_DEFINITIONS "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING;CUDNN_FRONTEND_SKIP_JSON_LIB")
endfunction()
