// Placing a model's data in the caches as a layer finds it inside a larger
// model (layer bricks' cold steps).
#pragma once

#include <cstddef>

namespace paradnn {

// Writes back and drops [data, data + bytes) from every cache level,
// `threads` threads each flushing its share.
void FlushFromCaches(const void* data, size_t bytes, int threads);

// Reads [data, data + bytes) with `threads` threads, each its share, as
// the threads of the layer that wrote it would leave it.
void ReadIntoCaches(const void* data, size_t bytes, int threads);

}  // namespace paradnn
