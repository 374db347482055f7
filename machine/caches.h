// The caches' sizes, as the machine says them or measured, and placing a
// model's data in them as a layer finds it inside a larger model (layer
// bricks' cold steps).
#pragma once

#include <cstddef>
#include <cstdint>

namespace paradnn {

// The size of CPU 0's cache of level 2 or 3 as the kernel describes it
// (/sys/devices/system/cpu/cpu0/cache); 0 where it does not.
size_t KernelCacheBytes(int level);

// The same as glibc reads it from CPUID; 0 where it does not say. On AMD
// its L3 is all of the package's L3s together (320 MB on a 32 MB EPYC,
// 508 MB on a virtual one), of which a core reads only its own.
size_t CpuidCacheBytes(int level);

// Whether this is an AMD CPU without the topology extensions (CPUID
// 0x80000001 ECX bit 22), as virtual machines that hide them present it:
// leaf 0x8000001D, defined only with them, then describes no cache, and
// oneDNN 3 (its Xbyak reads AMD's cache sizes there regardless) takes the
// L1 for 1 byte, which breaks its reorders of padded layouts and can
// divide by zero sizing a convolution's blocks.
bool AmdCacheLeafMissing();

// The L2 cache of one core, in bytes: the kernel's, else CPUID's (1 MiB
// where neither says).
int64_t L2Bytes();

// The L3 a core of this machine reads, measured: the largest buffer of
// which a chase of dependent loads through its lines, in random order,
// finds at least half in the caches (nearer the latency of buffers of two
// L2s than memory's), in steps of a quarter, up to `most` bytes. Took
// 0.2-0.9 s on a virtual EPYC of 1 MB of L2; docs/bricks.md at 23ff8d0, "Where
// the kernel does not say".
size_t MeasureL3Bytes(size_t l2, size_t most);

// Writes back and drops [data, data + bytes) from every cache level,
// `threads` threads each flushing its share.
void FlushFromCaches(const void* data, size_t bytes, int threads);

// Writes a buffer of twice `l3` bytes and at least 256 MB, `threads`
// threads each their share: every level then holds other data, modified,
// as a model's other layers leave them, and whatever a step writes first
// evicts one of those lines and writes it back to memory.
void FillCachesWithOtherData(size_t l3, int threads);

// Reads one byte of every 4 KB page of 256 MB of other data, `threads`
// threads each their share: the TLBs then hold those pages' translations,
// not a step's, as a layer finds them after the rest of a large model.
void DropTranslations(int threads);

// Reads [data, data + bytes) with `threads` threads, each its share, as
// the threads of the layer that wrote it would leave it.
void ReadIntoCaches(const void* data, size_t bytes, int threads);

}  // namespace paradnn
