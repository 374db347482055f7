// oneDNN backend. Dense layers (inner product) and embeddings.
#include "backends/onednn/runner.h"

namespace paradnn::onednn {

void OnednnRunner::BuildDense(int i, const Layer& l) {
  const int x = l.inputs[0];
  Flatten(x);
  const memory src = out_[x];
  const Dims src_dims = DimsOf(src.get_desc());
  Dims w_dims = {l.units, src_dims[1]};
  Tag w_tag = Tag::oi;
  // After the global pool: [N, C, 1, 1], or [N, C, 1, 1, 1] of video.
  if (src_dims.size() > 2) {
    w_dims.resize(src_dims.size(), 1);
    w_tag = src_dims.size() == 4 ? Tag::oihw : Tag::oidhw;
  }
  const Dims dst_dims = {src_dims[0], l.units};
  // Inference may run it with the layers after it (FusedAttr).
  const FusedGroup* group = plan_.AnchoredAt(i);
  // The logits stay plain for the loss.
  const bool logits = (group ? group->Output() : i) == graph_.logits();
  memory::desc src_md(src_dims, dt_, Tag::any);
  memory::desc w_md(w_dims, dt_, Tag::any);
  memory::desc b_md =
      l.bias ? memory::desc({l.units}, dt_, Tag::x) : memory::desc();
  memory::desc dst_md(dst_dims, dt_, logits ? Tag::nc : Tag::any);
  const auto pd = InnerProductPd(
      engine_, Forward(), src_md, w_md, l.bias ? &b_md : nullptr, dst_md,
      group ? FusedAttr(*group) : dnnl::primitive_attr());
  AddParam(i, "weight", pd.weights_desc(), memory::desc(w_dims, Dt::f32, w_tag),
           pd.weights_desc());
  if (l.bias) {
    AddParam(i, "bias", pd.bias_desc(),
             memory::desc({l.units}, Dt::f32, Tag::x), pd.bias_desc());
  }
  if (group) {
    FusedOutput(*group, pd.dst_desc());
  } else {
    SetOut(i, pd.dst_desc());
  }
  const memory in = Input(x, pd.src_desc());
  Weight& w = ParamOf(i, "weight");
  Args args = {
      {DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, w.value}, {DNNL_ARG_DST, out_[i]}};
  if (l.bias) args[DNNL_ARG_BIAS] = ParamOf(i, "bias").value;
  Run(forward_, dnnl::inner_product_forward(pd), args);
  if (!train_) return;
  const memory::desc bias_md = l.bias ? pd.bias_desc() : memory::desc();
  const auto wpd =
      InnerProductWeightsPd(engine_, pd.src_desc(), pd.weights_desc(),
                            l.bias ? &bias_md : nullptr, pd.dst_desc(), pd);
  Args grads = {{DNNL_ARG_SRC, in},
                {DNNL_ARG_DIFF_DST, diff_[i]},
                {DNNL_ARG_DIFF_WEIGHTS, w.grad}};
  if (l.bias) grads[DNNL_ARG_DIFF_BIAS] = ParamOf(i, "bias").grad;
  Run(backward_[i], dnnl::inner_product_backward_weights(wpd), grads);
  if (Grad(x)) {
    const auto dpd = InnerProductDataPd(engine_, pd.src_desc(),
                                        pd.weights_desc(), pd.dst_desc(), pd);
    memory grad = GradTarget(x, i, dpd.diff_src_desc());
    Run(backward_[i], dnnl::inner_product_backward_data(dpd),
        {{DNNL_ARG_DIFF_DST, diff_[i]},
         {DNNL_ARG_WEIGHTS, w.value},
         {DNNL_ARG_DIFF_SRC, grad}});
    Deliver(x, i, grad);
  }
}

void OnednnRunner::BuildEmbedding(int i, const Layer& l) {
  const memory::desc table_md({l.vocab, l.units}, dt_, Tag::ab);
  AddParam(i, "weight", table_md,
           memory::desc({l.vocab, l.units}, Dt::f32, Tag::ab),
           memory::desc({l.vocab, l.units}, Dt::f32, Tag::ab));
  SetOut(i, memory::desc(l.shape, dt_, Tag::tnc));
  Weight& table = ParamOf(i, "weight");
  const int64_t width = l.units * (dt_ == Dt::f32 ? 4 : 2);
  const std::vector<int64_t>& ids = tokens_[l.inputs[0]];
  Push(forward_, OpClass::kMovement, "embedding",
       [this, i, &table, &ids, width] {
         const char* t =
             static_cast<const char*>(table.value.get_data_handle());
         char* o = static_cast<char*>(out_[i].get_data_handle());
         const int64_t n = static_cast<int64_t>(ids.size());
#pragma omp parallel for
         for (int64_t k = 0; k < n; ++k) {
           std::memcpy(o + k * width, t + ids[k] * width, width);
         }
       });
  if (!train_) return;
  const int64_t units = l.units;
  Push(backward_[i], OpClass::kMovement, "embedding",
       [this, i, &table, &ids, units] {
         float* g = static_cast<float*>(table.grad.get_data_handle());
         std::memset(g, 0, table.grad.get_desc().get_size());
         const void* d = diff_[i].get_data_handle();
         // Rows of one token add up.
         ForEachIdColumns(ids, units, threads_,
                          [&](int64_t k, int64_t from, int64_t to) {
                            float* row = g + ids[k] * units;
                            for (int64_t e = from; e < to; ++e)
                              row[e] += Load(d, dt_, k * units + e);
                          });
       });
}

}  // namespace paradnn::onednn
