# Finds TOML++ (https://marzer.github.io/tomlplusplus) and provides
# TomlPlusPlus::TomlPlusPlus, used in header-only mode everywhere.
#
# Where the headers come from:
#   - the Debian package libtomlplusplus-dev (/usr/include/toml++) on the
#     development machine and in CI;
#   - on the GPU machine, which lacks the package, a copy of those headers in
#     the git-ignored folder .deps/include, made by scripts/gpu_headers.sh on
#     the development machine and carried along with the working tree.
# Debian also ships a compiled libtomlplusplus.so and a CMake package for it;
# we use neither, so that every machine builds the same header-only way.
#
# Sets TomlPlusPlus_FOUND, TomlPlusPlus_INCLUDE_DIR, TomlPlusPlus_VERSION.
# A different location can be given with -DTomlPlusPlus_INCLUDE_DIR=...

# PATHS (not HINTS): the system's headers win when both are present.
find_path(TomlPlusPlus_INCLUDE_DIR
  NAMES toml++/toml.h
  PATHS "${PROJECT_SOURCE_DIR}/.deps/include"
  DOC "folder that contains toml++/toml.h")

if(TomlPlusPlus_INCLUDE_DIR AND EXISTS "${TomlPlusPlus_INCLUDE_DIR}/toml++/impl/version.h")
  file(STRINGS "${TomlPlusPlus_INCLUDE_DIR}/toml++/impl/version.h" _toml_version_lines
       REGEX "#define TOML_LIB_(MAJOR|MINOR|PATCH) ")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define TOML_LIB_${_part} ([0-9]+).*" "\\1" _toml_${_part}
           "${_toml_version_lines}")
  endforeach()
  set(TomlPlusPlus_VERSION "${_toml_MAJOR}.${_toml_MINOR}.${_toml_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(TomlPlusPlus
  REQUIRED_VARS TomlPlusPlus_INCLUDE_DIR
  VERSION_VAR TomlPlusPlus_VERSION
  REASON_FAILURE_MESSAGE
    "install libtomlplusplus-dev (Debian), or on a machine without it run scripts/gpu_headers.sh where it is installed and bring .deps/include along")

if(TomlPlusPlus_FOUND AND NOT TARGET TomlPlusPlus::TomlPlusPlus)
  add_library(TomlPlusPlus::TomlPlusPlus INTERFACE IMPORTED)
  # Imported include directories are SYSTEM: TOML++'s own warnings stay quiet.
  set_target_properties(TomlPlusPlus::TomlPlusPlus PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TomlPlusPlus_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "TOML_HEADER_ONLY=1")
endif()
mark_as_advanced(TomlPlusPlus_INCLUDE_DIR)
