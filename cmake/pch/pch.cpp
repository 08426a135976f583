// Exists so that CMake has a target to compile the shared precompiled header for.
