// The BLAS a backend's library loaded into this process, and OpenBLAS's
// choice of kernels: compiled into the modules whose library calls a BLAS
// (LibTorch's CPU products).
#pragma once

#include <string>

namespace paradnn {

// The path of the BLAS library the dynamic linker loaded (a name with
// "blas" or "mkl" in /proc/self/maps), "" where none is.
std::string LoadedBlasLibrary();

// Where OpenBLAS fell back to its generic kernels on a CPU it does not
// know, it chooses again with those of the CPU's vector extensions, once per
// process, before the first product; returns OpenBLAS's own choice where it
// replaced it, "" otherwise. Later calls return the first answer.
const std::string& ReplacedBlasCore();

// The kernels OpenBLAS runs (", OpenBLAS core Haswell"), where the BLAS is
// OpenBLAS, and which it chose itself where paradnn chose others; "" for
// another BLAS.
std::string BlasCore();

}  // namespace paradnn
