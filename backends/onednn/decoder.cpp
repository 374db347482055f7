// oneDNN backend. The decoder's layers (the LLM family, inference only):
// RMSNorm, rotary positions, SwiGLU, attention over a key/value cache, the
// last position. oneDNN 2.6 has neither an RMS normalization nor a rotary
// primitive: those two are loops of our own over rows, as the embedding is;
// the rest are primitives.
#include <type_traits>

#include "backends/onednn/runner.h"

namespace paradnn::onednn {
namespace {

inline float ToFloat(float v) { return v; }
inline float ToFloat(uint16_t v) { return Bf16ToFloat(v); }
inline void Put(float* p, float v) { *p = v; }
inline void Put(uint16_t* p, float v) { *p = FloatToBf16(v); }

// Calls f with a null pointer to dt's element type (float for f32,
// uint16_t for bf16): one loop template serves both types.
template <typename F>
void ForType(Dt dt, F f) {
  if (dt == Dt::f32) {
    f(static_cast<float*>(nullptr));
  } else {
    f(static_cast<uint16_t*>(nullptr));
  }
}

template <typename T>
T* At(const memory& m) {
  return static_cast<T*>(m.get_data_handle());
}

// y = x / sqrt(mean(x^2) + eps) * w, row by row, in fp32.
template <typename T>
void RmsRows(const T* x, const T* w, T* y, int64_t rows, int64_t n,
             int threads) {
#pragma omp parallel for num_threads(threads)
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = x + r * n;
    T* out = y + r * n;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t k = 0; k < n; ++k) {
      const float v = ToFloat(in[k]);
      sum += v * v;
    }
    const float scale = static_cast<float>(
        1 / std::sqrt(sum / static_cast<double>(n) + kRmsNormEpsilon));
    for (int64_t k = 0; k < n; ++k) {
      Put(out + k, ToFloat(in[k]) * scale * ToFloat(w[k]));
    }
  }
}

// Each head's pairs (j, j + half) of row r (position r / batch) turned by
// that position's angles.
template <typename T>
void RopeRows(const T* x, T* y, const float* cos, const float* sin,
              int64_t rows, int64_t batch, int64_t heads, int64_t half,
              int threads) {
  const int64_t n = heads * 2 * half;
#pragma omp parallel for num_threads(threads)
  for (int64_t r = 0; r < rows; ++r) {
    const float* c = cos + r / batch * half;
    const float* s = sin + r / batch * half;
    for (int64_t h = 0; h < heads; ++h) {
      const T* a = x + r * n + h * 2 * half;
      T* out = y + r * n + h * 2 * half;
      for (int64_t j = 0; j < half; ++j) {
        const float u = ToFloat(a[j]), v = ToFloat(a[half + j]);
        Put(out + j, u * c[j] - v * s[j]);
        Put(out + half + j, v * c[j] + u * s[j]);
      }
    }
  }
}

int64_t Aligned(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// A prompt's queries attend in chunks of this many positions, each to the
// keys up to its last position: the products the causal mask discards
// shrink from half the square to a triangle per chunk (1/16 of the products
// at 1024 positions), while a chunk's products keep 128 rows or more per
// key/value head, several row blocks of oneDNN's matmul kernels.
constexpr int64_t kChunk = 128;

// An attention layer's scratch, each part at a 64-byte boundary: a chunk's
// scores (softmax in place) first, then, with more than one position, the
// queries and the result in the grouped order.
int64_t ScoresBytes(const Layer& l, int64_t element) {
  return Aligned(l.shape[1] * l.heads * std::min(l.shape[0], kChunk) *
                 l.context * element);
}

int64_t ScratchBytes(const Layer& l, int64_t element) {
  const int64_t grouped = l.shape[0] > 1 ? Elements(l.shape) * element : 0;
  return ScoresBytes(l, element) + 2 * Aligned(grouped);
}

}  // namespace

// Layer x's output as a plain [rows, units] matrix.
memory OnednnRunner::PlainRows(int x) {
  Flatten(x);
  const Dims dims = DimsOf(out_[x].get_desc());
  return Input(x, memory::desc(dims, dt_, Tag::ab));
}

void OnednnRunner::BuildRmsNorm(int i, const Layer& l) {
  PARADNN_CHECK(!train_, "onednn: RMSNorm is built for inference only");
  const memory x = PlainRows(l.inputs[0]);
  const Dims dims = DimsOf(x.get_desc());
  const memory::desc w_md({l.units}, dt_, Tag::x);
  AddParam(i, "weight", w_md, memory::desc({l.units}, Dt::f32, Tag::x), w_md);
  SetOut(i, x.get_desc());
  const memory w = ParamOf(i, "weight").value, y = out_[i];
  const int64_t rows = dims[0], n = dims[1];
  Push(forward_, OpClass::kElementwise, "rmsnorm", [this, x, w, y, rows, n] {
    ForType(dt_, [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      RmsRows(At<T>(x), At<T>(w), At<T>(y), rows, n, threads_);
    });
  });
}

void OnednnRunner::BuildRope(int i, const Layer& l) {
  PARADNN_CHECK(!train_, "onednn: rotary positions are built for inference");
  const memory x = PlainRows(l.inputs[0]);
  SetOut(i, x.get_desc());
  const memory y = out_[i];
  tables_.emplace_back();
  std::pair<std::vector<float>, std::vector<float>>& t = tables_.back();
  RotaryTables(l, &t.first, &t.second);
  const int64_t rows = DimsOf(x.get_desc())[0], batch = l.shape[1];
  const int64_t heads = l.heads, half = l.units / l.heads / 2;
  Push(forward_, OpClass::kElementwise, "rope",
       [this, x, y, &t, rows, batch, heads, half] {
         ForType(dt_, [&](auto* type) {
           using T = std::remove_pointer_t<decltype(type)>;
           RopeRows(At<T>(x), At<T>(y), t.first.data(), t.second.data(), rows,
                    batch, heads, half, threads_);
         });
       });
}

// silu(gate) * up: the swish activation, then the product in place. (With
// the product as the activation's post-op oneDNN 2.6 runs reference code.)
void OnednnRunner::BuildSwiGlu(int i, const Layer& l) {
  PARADNN_CHECK(!train_, "onednn: SwiGLU is built for inference only");
  const memory gate = PlainRows(l.inputs[0]);
  const memory up = PlainRows(l.inputs[1]);
  const memory::desc md = gate.get_desc();
  SetOut(i, md);
  Run(forward_,
      dnnl::eltwise_forward(EltwisePd(engine_, Forward(),
                                      dnnl::algorithm::eltwise_swish, md, 1.f)),
      {{DNNL_ARG_SRC, gate}, {DNNL_ARG_DST, out_[i]}});
  Run(forward_,
      dnnl::binary(BinaryPd(engine_, dnnl::algorithm::binary_mul, md, md, md)),
      {{DNNL_ARG_SRC_0, out_[i]},
       {DNNL_ARG_SRC_1, up},
       {DNNL_ARG_DST, out_[i]}});
}

// A view of the input's last `batch` rows, its last position.
void OnednnRunner::BuildLastPosition(int i, const Layer& l) {
  const memory x = PlainRows(l.inputs[0]);
  const int64_t rows = DimsOf(x.get_desc())[0], batch = l.shape[1];
  owners_.push_back(x);
  const memory::desc md({batch, l.units}, dt_, Tag::ab);
  char* base = static_cast<char*>(x.get_data_handle());
  out_[i] = memory(md, engine_, base + (rows - batch) * md.get_size() / batch);
}

// One scratch buffer for every attention layer's scores, queries and
// result: each layer's are dead once it has run, so the model holds one
// layer's (the cost model's workspace), not one per layer. Sized for the
// largest of them when the first is built.
char* OnednnRunner::AttentionScratch() {
  if (!attention_scratch_) {
    int64_t bytes = 0;
    for (const Layer& other : graph_.layers()) {
      if (other.op == Op::kCachedAttention) {
        bytes =
            std::max(bytes, ScratchBytes(other, memory::data_type_size(dt_)));
      }
    }
    attention_scratch_ = Make(memory::desc({bytes}, Dt::u8, Tag::a));
  }
  return static_cast<char*>(attention_scratch_.get_data_handle());
}

// The scores of a chunk of positions [from, from + span) against `keys`
// keys: row t x group + g holds position from + t of the keys' numbering,
// which sees keys up to it; -inf past it, added to the scores in place (as
// the matmul's post-op it would run oneDNN's reference code). Layers of one
// shape share their masks.
memory OnednnRunner::CausalMask(int64_t from, int64_t span, int64_t group,
                                int64_t keys) {
  const memory::desc md({1, 1, span * group, keys}, Dt::f32, Tag::abcd);
  for (const memory& m : masks_) {
    if (m.get_desc() == md) return m;
  }
  memory mask = Make(md);
  float* m = static_cast<float*>(mask.get_data_handle());
  for (int64_t r = 0; r < span * group; ++r) {
    for (int64_t c = 0; c < keys; ++c) {
      m[r * keys + c] =
          c > from + r / group ? -std::numeric_limits<float>::infinity() : 0.f;
    }
  }
  masks_.push_back(mask);
  return mask;
}

// The cache is [batch, kv_heads, context, dh] per layer, keys and values.
// Query head kv x group + g reads key/value head kv, so the queries as
// [batch, kv_heads, length x group, dh] (position-major) make each key/value
// head's products one matrix product over its group's rows: the cache is
// read in place, once per key/value head, and never copied per query head.
// A row r of [length, batch, heads x dh] holds position r / batch: with one
// position (decode) the queries and the output are already in that order;
// with more (prefill) a reorder brings them in and out, and the positions
// attend in chunks of kChunk, each only to the keys up to its last.
void OnednnRunner::BuildCachedAttention(int i, const Layer& l) {
  PARADNN_CHECK(!train_, "onednn: cached attention is built for inference");
  const int64_t length = l.shape[0], batch = l.shape[1], units = l.units;
  const int64_t kvh = l.kv_heads, dh = units / l.heads;
  const int64_t group = l.heads / kvh, context = l.context;
  const int64_t first = context - length;
  const memory q = PlainRows(l.inputs[0]), k = PlainRows(l.inputs[1]),
               v = PlainRows(l.inputs[2]);
  SetOut(i, q.get_desc());
  auto view = [&](const memory& m, const memory::desc& md) {
    owners_.push_back(m);
    return memory(md, engine_, m.get_data_handle());
  };
  // The cache's first contents, keys then values, converted from fp32.
  const memory::desc cache_md({batch, kvh, context, dh}, dt_, Tag::abcd);
  memory keys = Make(cache_md), values = Make(cache_md);
  {
    std::vector<float> init = InitCache(graph_, seed_, i);
    const memory::desc user_md(DimsOf(cache_md), Dt::f32, Tag::abcd);
    RunNow(memory(user_md, engine_, init.data()), keys);
    RunNow(memory(user_md, engine_, init.data() + init.size() / 2), values);
  }
  // The new keys and values into the cache's last `length` positions.
  const Dims new_dims = {batch, kvh, length, dh};
  const memory::desc new_md(new_dims, dt_,
                            Dims{kvh * dh, dh, batch * kvh * dh, 1});
  const memory::desc slot_md =
      cache_md.submemory_desc(new_dims, {0, 0, first, 0});
  Reorder(forward_, view(k, new_md), view(keys, slot_md), false);
  Reorder(forward_, view(v, new_md), view(values, slot_md), false);
  // [length, batch, kv_heads x group x dh] as [batch, kv_heads, length,
  // group, dh], and the same shape plain.
  const Dims split_dims = {batch, kvh, length, group, dh};
  const memory::desc split_md(split_dims, dt_,
                              Dims{units, group * dh, batch * units, dh, 1});
  const memory::desc grouped_md({batch, kvh, length * group, dh}, dt_,
                                Tag::abcd);
  char* scratch = AttentionScratch();
  memory queries = view(q, grouped_md), result = view(out_[i], grouped_md);
  if (length > 1) {
    const int64_t at = ScoresBytes(l, memory::data_type_size(dt_));
    queries = memory(grouped_md, engine_, scratch + at);
    result = memory(grouped_md, engine_,
                    scratch + at + Aligned(grouped_md.get_size()));
    Reorder(forward_, view(q, split_md),
            memory(memory::desc(split_dims, dt_, Tag::abcde), engine_,
                   queries.get_data_handle()),
            false);
  }
  dnnl::primitive_attr scaled;
  ScaleOutput(scaled, 1.f / std::sqrt(static_cast<float>(dh)));
  for (int64_t from = 0; from < length; from += kChunk) {
    const int64_t span = std::min(kChunk, length - from);
    // The keys of positions up to the chunk's last.
    const int64_t seen = first + from + span;
    const Dims rows_at = {0, 0, from * group, 0};
    const memory::desc rows_md =
        grouped_md.submemory_desc({batch, kvh, span * group, dh}, rows_at);
    const memory::desc keys_t_md({batch, kvh, dh, seen}, dt_,
                                 Dims{kvh * context * dh, context * dh, 1, dh});
    const memory::desc values_md({batch, kvh, seen, dh}, dt_,
                                 Dims{kvh * context * dh, context * dh, dh, 1});
    const memory::desc scores_md({batch, kvh, span * group, seen}, dt_,
                                 Tag::abcd);
    const memory scores(scores_md, engine_, scratch);
    Run(forward_,
        dnnl::matmul(MatmulPd(engine_, rows_md, keys_t_md, scores_md, scaled)),
        {{DNNL_ARG_SRC, view(queries, rows_md)},
         {DNNL_ARG_WEIGHTS, view(keys, keys_t_md)},
         {DNNL_ARG_DST, scores}});
    if (span > 1) {
      const memory mask = CausalMask(first + from, span, group, seen);
      Run(forward_,
          dnnl::binary(BinaryPd(engine_, dnnl::algorithm::binary_add, scores_md,
                                mask.get_desc(), scores_md)),
          {{DNNL_ARG_SRC_0, scores},
           {DNNL_ARG_SRC_1, mask},
           {DNNL_ARG_DST, scores}});
    }
    Run(forward_,
        dnnl::softmax_forward(SoftmaxPd(engine_, Forward(), scores_md, 3)),
        {{DNNL_ARG_SRC, scores}, {DNNL_ARG_DST, scores}});
    Run(forward_,
        dnnl::matmul(MatmulPd(engine_, scores_md, values_md, rows_md)),
        {{DNNL_ARG_SRC, scores},
         {DNNL_ARG_WEIGHTS, view(values, values_md)},
         {DNNL_ARG_DST, view(result, rows_md)}});
  }
  if (length > 1) {
    Reorder(forward_,
            memory(memory::desc(split_dims, dt_, Tag::abcde), engine_,
                   result.get_data_handle()),
            view(out_[i], split_md), false);
  }
}

}  // namespace paradnn::onednn
