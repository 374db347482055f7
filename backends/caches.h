// Placing a model's data in the caches as a layer finds it inside a larger
// model (layer bricks' cold steps).
#pragma once

#include <cstddef>

namespace paradnn {

// Writes back and drops [data, data + bytes) from every cache level,
// `threads` threads each flushing its share.
void FlushFromCaches(const void* data, size_t bytes, int threads);

// Writes a buffer the size of the last-level cache, `threads` threads each
// their share: every level then holds other data, modified, as a model's
// other layers leave them, and whatever a step writes first evicts one of
// those lines and writes it back to memory.
void FillCachesWithOtherData(int threads);

// Reads [data, data + bytes) with `threads` threads, each its share, as
// the threads of the layer that wrote it would leave it.
void ReadIntoCaches(const void* data, size_t bytes, int threads);

}  // namespace paradnn
