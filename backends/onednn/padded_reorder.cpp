#include "backends/onednn/padded_reorder.h"

#include <cstring>
#include <stdexcept>
#include <vector>

namespace paradnn::onednn {
namespace {

using Dt = memory::data_type;

// Per dimension, the offset (in elements) its index i adds: the place of i
// in the dim's inner blocks and its outer index times the dim's stride.
// Offsets in a blocked layout are such sums, one term per dimension.
std::vector<std::vector<int64_t>> OffsetTables(const Md& md) {
  const Blocking b = BlockingOf(md);
  std::vector<std::vector<int64_t>> tables(b.dims.size());
  for (size_t d = 0; d < b.dims.size(); ++d) {
    tables[d].resize(b.dims[d]);
    for (int64_t i = 0; i < b.dims[d]; ++i) {
      int64_t pos = i, offset = 0, block_stride = 1;
      for (size_t k = b.inner_blks.size(); k-- > 0;) {
        if (b.inner_idxs[k] == static_cast<int64_t>(d)) {
          offset += pos % b.inner_blks[k] * block_stride;
          pos /= b.inner_blks[k];
        }
        block_stride *= b.inner_blks[k];
      }
      tables[d][i] = offset + pos * b.strides[d];
    }
  }
  return tables;
}

float Load(const void* base, Dt dt, int64_t at) {
  if (dt == Dt::f32) return static_cast<const float*>(base)[at];
  const uint32_t bits = uint32_t{static_cast<const uint16_t*>(base)[at]} << 16;
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

void Store(void* base, Dt dt, int64_t at, float v) {
  if (dt == Dt::f32) {
    static_cast<float*>(base)[at] = v;
    return;
  }
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  bits += 0x7fff + ((bits >> 16) & 1);  // to nearest, ties to even
  static_cast<uint16_t*>(base)[at] = static_cast<uint16_t>(bits >> 16);
}

bool Supported(Dt dt) { return dt == Dt::f32 || dt == Dt::bf16; }

}  // namespace

bool Padded(const Md& md) {
  const Blocking b = BlockingOf(md);
  return b.dims != b.padded_dims;
}

void CopyElements(const memory& src, const memory& dst, bool accumulate,
                  float scale) {
  const Md& s = src.get_desc();
  const Md& d = dst.get_desc();
  const Dt st = TypeOf(s), dt = TypeOf(d);
  const Dims dims = DimsOf(s);
  if (!Supported(st) || !Supported(dt) || dims != DimsOf(d)) {
    throw std::logic_error("element copy between these layouts unsupported");
  }
  const auto from = OffsetTables(s), to = OffsetTables(d);
  const int64_t from0 = BlockingOf(s).offset0, to0 = BlockingOf(d).offset0;
  const void* in = src.get_data_handle();
  void* out = dst.get_data_handle();
  if (!accumulate && Padded(d)) std::memset(out, 0, d.get_size());
  int64_t total = 1;
  for (int64_t n : dims) total *= n;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t i = from0, o = to0;
    for (size_t k = 0; k < dims.size(); ++k) {
      i += from[k][index[k]];
      o += to[k][index[k]];
    }
    const float v = scale * Load(in, st, i);
    Store(out, dt, o, accumulate ? Load(out, dt, o) + v : v);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++index[k] < dims[k]) break;
      index[k] = 0;
    }
  }
}

bool PaddedReordersExact() {
  static const bool exact = [] {
    constexpr int kRows = 16, kCols = 16, kBlock = 32;
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    std::vector<float> values(kRows * kCols);
    for (size_t i = 0; i < values.size(); ++i) values[i] = i + 1.f;
    const Md plain({kRows, kCols}, Dt::f32, memory::format_tag::ab);
    const Md blocked({kRows, kCols}, Dt::f32, memory::format_tag::AB16b32a);
    memory in(plain, engine, values.data()), out(blocked, engine);
    dnnl::reorder(in, out).execute(stream, in, out);
    stream.wait();
    // AB16b32a: one block of 16 columns by 32 rows, rows innermost.
    const float* got = static_cast<const float*>(out.get_data_handle());
    for (int r = 0; r < kRows; ++r) {
      for (int c = 0; c < kCols; ++c) {
        if (got[c * kBlock + r] != values[r * kCols + c]) return false;
      }
    }
    return true;
  }();
  return exact;
}

}  // namespace paradnn::onednn
