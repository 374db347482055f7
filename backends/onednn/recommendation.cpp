// oneDNN backend. The layers of recommendation models (DLRM): embedding
// bags, concatenation, DCNv2's cross layers.
#include <optional>
#include <type_traits>

#include "backends/onednn/runner.h"

namespace paradnn::onednn {
namespace {

// Plain f32 or bf16 elements as float and back, for the loops of our own.
template <typename T>
float Get(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, float>) {
    return p[i];
  } else {
    return Bf16ToFloat(p[i]);
  }
}

template <typename T>
void Put(T* p, int64_t i, float v) {
  if constexpr (std::is_same_v<T, float>) {
    p[i] = v;
  } else {
    p[i] = FloatToBf16(v);
  }
}

// out[b] = the sum of table rows ids[t x batch + b] over t < hotness.
template <typename T>
void SumRows(const T* table, const std::vector<int64_t>& ids, int64_t batch,
             int64_t units, T* out) {
  const int64_t hotness = static_cast<int64_t>(ids.size()) / batch;
#pragma omp parallel for
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t e = 0; e < units; ++e) {
      float sum = 0;
      for (int64_t t = 0; t < hotness; ++t) {
        sum += Get(table, ids[t * batch + b] * units + e);
      }
      Put(out, b * units + e, sum);
    }
  }
}

// SGD on the rows looked up: row ids[k] -= lr x grad[k % batch], for every
// id.
template <typename T>
void UpdateRows(T* table, const std::vector<int64_t>& ids, int64_t batch,
                int64_t units, const T* grad, int threads) {
  ForEachIdColumns(
      ids, units, threads, [&](int64_t k, int64_t from, int64_t to) {
        const int64_t row = ids[k] * units;
        const int64_t b = (k % batch) * units;
        for (int64_t e = from; e < to; ++e) {
          Put(table, row + e,
              Get(table, row + e) - kLearningRate * Get(grad, b + e));
        }
      });
}

}  // namespace

void OnednnRunner::BuildEmbeddingBag(int i, const Layer& l) {
  const Dims table_dims = {l.vocab, l.units};
  AddParam(i, "weight", memory::desc(table_dims, dt_, Tag::ab),
           memory::desc(table_dims, Dt::f32, Tag::ab), memory::desc());
  SetOut(i, memory::desc(l.shape, dt_, Tag::ab));
  Weight& table = ParamOf(i, "weight");
  const std::vector<int64_t>& ids = tokens_[l.inputs[0]];
  const int64_t batch = l.shape[0], units = l.units;
  const bool f32 = dt_ == Dt::f32;
  Push(forward_, OpClass::kMovement, "embedding bag",
       [this, i, &table, &ids, batch, units, f32] {
         void* t = table.value.get_data_handle();
         void* o = out_[i].get_data_handle();
         if (f32) {
           SumRows(static_cast<const float*>(t), ids, batch, units,
                   static_cast<float*>(o));
         } else {
           SumRows(static_cast<const uint16_t*>(t), ids, batch, units,
                   static_cast<uint16_t*>(o));
         }
       });
  if (!train_) return;
  Push(update_, OpClass::kOptimizer, "embedding bag rows",
       [this, i, &table, &ids, batch, units, f32] {
         void* t = table.value.get_data_handle();
         const void* d = diff_[i].get_data_handle();
         if (f32) {
           UpdateRows(static_cast<float*>(t), ids, batch, units,
                      static_cast<const float*>(d), threads_);
         } else {
           UpdateRows(static_cast<uint16_t*>(t), ids, batch, units,
                      static_cast<const uint16_t*>(d), threads_);
         }
       });
}

void OnednnRunner::BuildConcat(int i, const Layer& l) {
  const size_t rank = l.shape.size();
  const int64_t rows = Elements(l.shape) / l.shape.back();
  const int64_t size = dt_ == Dt::f32 ? 4 : 2;
  SetOut(i, memory::desc(l.shape, dt_, PlainTag(rank)));
  // Each input's memory, width and first column, in bytes.
  struct Part {
    memory in;
    int64_t width, offset;
  };
  std::vector<Part> parts;
  int64_t offset = 0;
  for (int x : l.inputs) {
    const Shape& s = graph_.layer(x).shape;
    const int64_t width = s.back() * size;
    parts.push_back(
        {Input(x, memory::desc(s, dt_, PlainTag(rank))), width, offset});
    offset += width;
  }
  const int64_t row = offset;
  Push(forward_, OpClass::kMovement, "concat", [this, i, parts, rows, row] {
    char* o = static_cast<char*>(out_[i].get_data_handle());
#pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
      for (const Part& p : parts) {
        std::memcpy(
            o + r * row + p.offset,
            static_cast<const char*>(p.in.get_data_handle()) + r * p.width,
            p.width);
      }
    }
  });
  if (!train_) return;
  std::vector<int> given;  // inputs given their gradient already
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const int x = l.inputs[k];
    if (!Grad(x)) continue;
    const memory::desc md = parts[k].in.get_desc();
    // An input read twice: its second part is added to its first.
    const bool again = std::count(given.begin(), given.end(), x) > 0;
    memory grad = again ? Make(md) : GradTarget(x, i, md);
    const Part p = parts[k];
    Push(backward_[i], OpClass::kMovement, "concat",
         [this, i, grad, p, rows, row] {
           const char* d = static_cast<const char*>(diff_[i].get_data_handle());
           char* g = static_cast<char*>(grad.get_data_handle());
#pragma omp parallel for
           for (int64_t r = 0; r < rows; ++r) {
             std::memcpy(g + r * p.width, d + r * row + p.offset, p.width);
           }
         });
    if (again) {
      Reorder(backward_[i], grad, diff_[x], true);
    } else {
      Deliver(x, i, grad);
      given.push_back(x);
    }
  }
}

void OnednnRunner::BuildCross(int i, const Layer& l) {
  const int x0 = l.inputs[0], x = l.inputs[1];
  const int64_t rows = l.shape[0], d = l.units, r = l.rank;
  const memory::desc plain({rows, d}, dt_, Tag::ab);
  const memory x0_in = Input(x0, plain);
  const memory x_in = x == x0 ? x0_in : Input(x, plain);
  using IpPd = dnnl::inner_product_forward::primitive_desc;
  // t = x V^T (low rank), then s = t U^T + b; or s = x W^T + b.
  std::optional<IpPd> v_pd;
  memory t;
  if (r > 0) {
    const memory::desc w_md({r, d}, dt_, Tag::any);
    v_pd = InnerProductPd(engine_, Forward(), plain, w_md, nullptr,
                          memory::desc({rows, r}, dt_, Tag::ab));
    AddParam(i, "weight_v", v_pd->weights_desc(),
             memory::desc({r, d}, Dt::f32, Tag::oi), v_pd->weights_desc());
    t = Make(v_pd->dst_desc());
    Run(forward_, dnnl::inner_product_forward(*v_pd),
        {{DNNL_ARG_SRC, x_in},
         {DNNL_ARG_WEIGHTS, ParamOf(i, "weight_v").value},
         {DNNL_ARG_DST, t}});
  }
  const memory u_src = r > 0 ? t : x_in;
  const int64_t inner = r > 0 ? r : d;
  const memory::desc b_md({d}, dt_, Tag::x);
  const IpPd u_pd =
      InnerProductPd(engine_, Forward(), u_src.get_desc(),
                     memory::desc({d, inner}, dt_, Tag::any), &b_md, plain);
  const char* u_role = r > 0 ? "weight_u" : "weight";
  AddParam(i, u_role, u_pd.weights_desc(),
           memory::desc({d, inner}, Dt::f32, Tag::oi), u_pd.weights_desc());
  AddParam(i, "bias", u_pd.bias_desc(), memory::desc({d}, Dt::f32, Tag::x),
           u_pd.bias_desc());
  Weight& u = ParamOf(i, u_role);
  Weight& bias = ParamOf(i, "bias");
  const memory s = Make(plain);
  Run(forward_, dnnl::inner_product_forward(u_pd),
      {{DNNL_ARG_SRC, u_src},
       {DNNL_ARG_WEIGHTS, u.value},
       {DNNL_ARG_BIAS, bias.value},
       {DNNL_ARG_DST, s}});
  // y = x0 * s + x.
  SetOut(i, plain);
  const dnnl::binary mul(
      BinaryPd(engine_, dnnl::algorithm::binary_mul, plain, plain, plain));
  const dnnl::binary add(
      BinaryPd(engine_, dnnl::algorithm::binary_add, plain, plain, plain));
  Run(forward_, mul,
      {{DNNL_ARG_SRC_0, x0_in}, {DNNL_ARG_SRC_1, s}, {DNNL_ARG_DST, out_[i]}});
  Run(forward_, add,
      {{DNNL_ARG_SRC_0, out_[i]},
       {DNNL_ARG_SRC_1, x_in},
       {DNNL_ARG_DST, out_[i]}});
  if (!train_) return;
  const memory& dy = diff_[i];
  // ds = dy * x0: the gradient of W x + b.
  const memory ds = Make(plain);
  Run(backward_[i], mul,
      {{DNNL_ARG_SRC_0, dy}, {DNNL_ARG_SRC_1, x0_in}, {DNNL_ARG_DST, ds}});
  Run(backward_[i],
      dnnl::inner_product_backward_weights(InnerProductWeightsPd(
          engine_, u_pd.src_desc(), u_pd.weights_desc(), &b_md, plain, u_pd)),
      {{DNNL_ARG_SRC, u_src},
       {DNNL_ARG_DIFF_DST, ds},
       {DNNL_ARG_DIFF_WEIGHTS, u.grad},
       {DNNL_ARG_DIFF_BIAS, bias.grad}});
  // The gradient reaching x through the product: dt V (low rank), ds W.
  memory into_x = ds;
  const IpPd* x_pd = &u_pd;
  Weight* x_weights = &u;
  if (r > 0) {
    const memory dt = Make(t.get_desc());
    Run(backward_[i],
        dnnl::inner_product_backward_data(InnerProductDataPd(
            engine_, u_pd.src_desc(), u_pd.weights_desc(), plain, u_pd)),
        {{DNNL_ARG_DIFF_DST, ds},
         {DNNL_ARG_WEIGHTS, u.value},
         {DNNL_ARG_DIFF_SRC, dt}});
    Weight& v = ParamOf(i, "weight_v");
    Run(backward_[i],
        dnnl::inner_product_backward_weights(
            InnerProductWeightsPd(engine_, plain, v_pd->weights_desc(), nullptr,
                                  v_pd->dst_desc(), *v_pd)),
        {{DNNL_ARG_SRC, x_in},
         {DNNL_ARG_DIFF_DST, dt},
         {DNNL_ARG_DIFF_WEIGHTS, v.grad}});
    into_x = dt;
    x_pd = &*v_pd;
    x_weights = &v;
  }
  if (Grad(x)) {
    memory gx = GradTarget(x, i, plain);
    Run(backward_[i],
        dnnl::inner_product_backward_data(InnerProductDataPd(
            engine_, plain, x_pd->weights_desc(), x_pd->dst_desc(), *x_pd)),
        {{DNNL_ARG_DIFF_DST, into_x},
         {DNNL_ARG_WEIGHTS, x_weights->value},
         {DNNL_ARG_DIFF_SRC, gx}});
    // + dy (the residual), and + dy * s where x is x0 too.
    Run(backward_[i], add,
        {{DNNL_ARG_SRC_0, gx}, {DNNL_ARG_SRC_1, dy}, {DNNL_ARG_DST, gx}});
    if (x == x0) {
      const memory dx0 = Make(plain);
      Run(backward_[i], mul,
          {{DNNL_ARG_SRC_0, dy}, {DNNL_ARG_SRC_1, s}, {DNNL_ARG_DST, dx0}});
      Run(backward_[i], add,
          {{DNNL_ARG_SRC_0, gx}, {DNNL_ARG_SRC_1, dx0}, {DNNL_ARG_DST, gx}});
    }
    Deliver(x, i, gx);
  }
  if (x != x0 && Grad(x0)) {
    memory g0 = GradTarget(x0, i, plain);
    Run(backward_[i], mul,
        {{DNNL_ARG_SRC_0, dy}, {DNNL_ARG_SRC_1, s}, {DNNL_ARG_DST, g0}});
    Deliver(x0, i, g0);
  }
}

}  // namespace paradnn::onednn
