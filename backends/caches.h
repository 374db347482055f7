// Placing a model's data in the caches as a layer finds it inside a larger
// model (layer bricks' cold steps).
#pragma once

#include <cstddef>

namespace paradnn {

// The size of CPU 0's cache of level 2 or 3, as the kernel describes it,
// else as glibc does (whose sysconf reports 320 MB of L3 on a
// 32 MB AMD EPYC here: all the package's L3s together); 0 where neither
// says.
size_t CacheBytes(int level);

// Writes back and drops [data, data + bytes) from every cache level,
// `threads` threads each flushing its share.
void FlushFromCaches(const void* data, size_t bytes, int threads);

// Writes a buffer of twice the L3 (of 32 MB where none is known),
// `threads` threads each their share: every level then holds other data,
// modified, as a model's other layers leave them, and whatever a step writes
// first evicts one of those lines and writes it back to memory.
void FillCachesWithOtherData(int threads);

// Reads [data, data + bytes) with `threads` threads, each its share, as
// the threads of the layer that wrote it would leave it.
void ReadIntoCaches(const void* data, size_t bytes, int threads);

}  // namespace paradnn
