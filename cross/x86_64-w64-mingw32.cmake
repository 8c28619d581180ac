# SPDX-License-Identifier: MIT
# cross/x86_64-w64-mingw32.cmake - CMake toolchain file for Windows x86-64 with Debian's
# MinGW-w64, the CMake twin of x86_64-w64-mingw32.txt (which says why -posix and why
# -static):
#   PKG_CONFIG_LIBDIR=/usr/x86_64-w64-mingw32/lib/pkgconfig \
#     cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cross/x86_64-w64-mingw32.cmake
# PKG_CONFIG_LIBDIR keeps pkg-config (hwloc's lookup) away from the Linux .pc files.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_CROSSCOMPILING_EMULATOR wine)
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
