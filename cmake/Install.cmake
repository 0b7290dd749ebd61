# The installable package (docs/adding-a-mechanism.md, "Plugins"):
#   cmake --install build --prefix P
# installs arch-bench (bin/), the mechanism SDK headers (include/arch_bench/, the same relative paths
# as in this tree, so a mechanism includes "mechanisms/mechanism.hpp" in and out of it), the core
# library (lib/), and lib/cmake/arch_bench/ so that another project can say
#   find_package(arch_bench 0.1 REQUIRED)
#   add_library(mymech MODULE mymech.cpp)
#   target_link_libraries(mymech PRIVATE arch_bench::mechanism_sdk)
#
# arch_bench::mechanism_sdk is headers only, on purpose: a plugin is loaded into the arch-bench
# process, and the SDK's out-of-line functions (make_attention_inputs, Allocator::allocate, ...)
# bind to the executable's own copies at dlopen time (arch-bench is linked with ENABLE_EXPORTS).
# Linking arch_bench_core into the plugin instead would give it a second registry and allocator
# accounting, and impose this build's -march=native; the loader refuses a plugin that carries the registry.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The public headers: the mechanism contract and the helpers a mechanism needs (inputs drawn as the
# built-ins draw them, fp64 comparison, storage dtypes). Keep this list small: each is a promise.
set(ARCH_BENCH_SDK_HEADERS
  mechanisms/mechanism.hpp
  mechanisms/process_bytes.hpp
  core/stop_request.hpp
  core/bf16.hpp
  core/kernel_helpers.hpp
  mechanisms/common/check_rows.hpp
  core/checked_size.hpp
  mechanisms/common/compare.hpp
  mechanisms/common/inputs.hpp
  mechanisms/common/matrix.hpp
  mechanisms/common/prepare_cell.hpp
  core/backends/allocator.hpp
  core/backends/backend.hpp
  core/backends/timing.hpp
  core/cell.hpp
  core/options.hpp
  core/dtype.hpp
  runner/plugins/plugin_api.hpp)

file(STRINGS ${PROJECT_SOURCE_DIR}/runner/plugins/plugin_api.hpp _contract_line
     REGEX "inline constexpr int kContractVersion = [0-9]+;")
string(REGEX REPLACE ".*= ([0-9]+);.*" "\\1" ARCH_BENCH_CONTRACT_VERSION "${_contract_line}")

add_library(arch_bench_mechanism_sdk INTERFACE)
add_library(arch_bench::mechanism_sdk ALIAS arch_bench_mechanism_sdk)
set_target_properties(arch_bench_mechanism_sdk PROPERTIES EXPORT_NAME mechanism_sdk)
target_include_directories(arch_bench_mechanism_sdk INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/arch_bench>)
target_link_libraries(arch_bench_mechanism_sdk INTERFACE nlohmann_json::nlohmann_json)
target_compile_features(arch_bench_mechanism_sdk INTERFACE cxx_std_20)

foreach(_header ${ARCH_BENCH_SDK_HEADERS})
  get_filename_component(_folder ${_header} DIRECTORY)
  install(FILES ${_header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/arch_bench/${_folder})
endforeach()
install(TARGETS arch-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The core archive (lib/libarch_bench_core.a), for reference and for a driver of one's own built
# with the same flags; it is no target of the package, because a plugin must never link it.
install(FILES $<TARGET_FILE:arch_bench_core> DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS arch_bench_mechanism_sdk EXPORT arch_benchTargets)
install(EXPORT arch_benchTargets NAMESPACE arch_bench:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/arch_bench)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/arch_benchConfig.cmake.in
  ${PROJECT_BINARY_DIR}/arch_benchConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/arch_bench
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR)
# 0.x: a minor release may change the contract, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/arch_benchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/arch_benchConfig.cmake ${PROJECT_BINARY_DIR}/arch_benchConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/arch_bench)
