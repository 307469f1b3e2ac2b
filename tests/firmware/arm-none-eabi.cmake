# CMake toolchain file: bare-metal ARM Cortex-M4 with Debian's gcc-arm-none-eabi and
# libnewlib-arm-none-eabi (newlib-nano, no FPU: the library does no floating point).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY) # nothing links without a startup file
set(WL_CORTEX_M4_FLAGS -mcpu=cortex-m4 -mthumb -mfloat-abi=soft)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
