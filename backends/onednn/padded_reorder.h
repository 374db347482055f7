// Reorders into and out of padded layouts where oneDNN's own are wrong.
//
// oneDNN 3.7's jit reorder splits a reorder's innermost run to fit the L1
// cache the CPU reports (through Xbyak, on AMD from CPUID leaf 0x8000001D).
// A virtual machine that leaves that leaf empty reads as a 1-byte L1, which
// sends every reorder down that split; where a layout has padding (a
// dimension not a multiple of its block: 97 outputs in blocks of 48) the
// split writes zeros over elements. The backend checks once whether oneDNN
// reorders into a padded layout exactly; where it does not, a reorder with a
// padded source or destination is copied element by element here.
#pragma once

#include "backends/onednn/compat.h"

namespace paradnn::onednn {

// Whether oneDNN puts a 16x16 matrix into a layout of 16x32 blocks (half
// of each block padding) exactly; checked once a process.
bool PaddedReordersExact();

// Whether the layout holds more elements than its dims (padding).
bool Padded(const Md& md);

// dst = (accumulate ? dst : 0) + scale * src for every element, in f32 or
// bf16 (rounded to nearest even) on either side; dst's padding is zero.
void CopyElements(const memory& src, const memory& dst, bool accumulate,
                  float scale);

}  // namespace paradnn::onednn
