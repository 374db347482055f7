// oneDNN backend. A vision transformer's token layers: feature maps as a
// sequence, the class token before it, and the class token's output.
#include <cstring>

#include "backends/onednn/runner.h"

namespace paradnn::onednn {
namespace {

// The plain [rows, units] rows [from, from + count) of m, a view.
memory Rows(const memory& m, int64_t from, int64_t count) {
  const Dims dims = DimsOf(m.get_desc());
  const Dt dt = TypeOf(m.get_desc());
  char* base = static_cast<char*>(m.get_data_handle());
  return memory(memory::desc({count, dims[1]}, dt, Tag::ab), m.get_engine(),
                base + from * dims[1] * memory::data_type_size(dt));
}

}  // namespace

// [N, C, H, W] -> [H x W, N, C]: one reorder into the output read as the
// maps' 4-D shape with the sequence's strides, and backward the other way.
void OnednnRunner::BuildSequence(int i, const Layer& l) {
  const int x = l.inputs[0];
  SetOut(i, memory::desc(l.shape, dt_, Tag::abc));
  const Dims in = DimsOf(out_[x].get_desc());  // N, C, H, W
  const memory::desc as_maps(
      in, dt_, Dims{in[1], 1, in[3] * in[0] * in[1], in[0] * in[1]});
  Reorder(forward_, out_[x],
          memory(as_maps, engine_, out_[i].get_data_handle()), false);
  if (!Grad(x)) return;
  memory grad = GradTarget(x, i, diff_[x].get_desc());
  Reorder(backward_[i], memory(as_maps, engine_, diff_[i].get_data_handle()),
          grad, false);
  Deliver(x, i, grad);
}

// [H x W, N, C] -> [N, C, H, W], plain: one reorder of the sequence's rows
// read as maps with the sequence's strides, and backward the other way.
void OnednnRunner::BuildMaps(int i, const Layer& l) {
  const int x = l.inputs[0];
  const memory rows = PlainRows(x);
  SetOut(i, memory::desc(l.shape, dt_, Tag::abcd));
  const Dims& d = l.shape;  // N, C, H, W
  const memory::desc as_maps(d, dt_,
                             Dims{d[1], 1, d[3] * d[0] * d[1], d[0] * d[1]});
  Reorder(forward_, memory(as_maps, engine_, rows.get_data_handle()), out_[i],
          false);
  if (!Grad(x)) return;
  memory grad = GradTarget(x, i, diff_[x].get_desc());
  Reorder(backward_[i], diff_[i],
          memory(as_maps, engine_, grad.get_data_handle()), false);
  Deliver(x, i, grad);
}

// [L, N, E] -> [1 + L, N, E]: position 0 is the token in every example
// (ones [N, 1] x token [1, E]), the rest a copy of the input; backward the
// token's gradient is position 0's summed over the batch (ones [1, N] x
// dy [N, E]) and the input's the rest of dy.
void OnednnRunner::BuildClassToken(int i, const Layer& l) {
  const int x = l.inputs[0];
  const memory rows = PlainRows(x);
  const int64_t batch = l.shape[1], units = l.units;
  const int64_t length = l.shape[0] - 1;
  const memory::desc token_md({1, units}, dt_, Tag::ab);
  AddParam(i, "weight", token_md, memory::desc({1, units}, Dt::f32, Tag::ab),
           memory::desc({1, units}, Dt::f32, Tag::ab));
  Weight& token = ParamOf(i, "weight");
  SetOut(i, memory::desc({l.shape[0] * batch, units}, dt_, Tag::ab));
  const memory ones = Ones(memory::desc({batch, 1}, dt_, Tag::ab));
  const memory first = Rows(out_[i], 0, batch);
  Reorder(forward_, rows, Rows(out_[i], batch, length * batch), false);
  const memory::desc token_value = token.value.get_desc();
  Run(forward_,
      dnnl::matmul(
          MatmulPd(engine_, ones.get_desc(), token_value, first.get_desc())),
      {{DNNL_ARG_SRC, ones},
       {DNNL_ARG_WEIGHTS, token.value},
       {DNNL_ARG_DST, first}});
  Reshape(i, l.shape);
  if (!train_) return;
  const memory ones_t(memory::desc({1, batch}, dt_, Tag::ab), engine_,
                      ones.get_data_handle());
  const memory dy(memory::desc({l.shape[0] * batch, units}, dt_, Tag::ab),
                  engine_, diff_[i].get_data_handle());
  const memory d_first = Rows(dy, 0, batch);
  Run(backward_[i],
      dnnl::matmul(MatmulPd(engine_, ones_t.get_desc(), d_first.get_desc(),
                            token.grad.get_desc())),
      {{DNNL_ARG_SRC, ones_t},
       {DNNL_ARG_WEIGHTS, d_first},
       {DNNL_ARG_DST, token.grad}});
  if (!Grad(x)) return;
  const memory d_rest = Rows(dy, batch, length * batch);
  memory grad = GradTarget(x, i, diff_[x].get_desc());
  Reorder(backward_[i], d_rest, grad, false);
  Deliver(x, i, grad);
}

// [L, N, E] -> [N, E]: a view of the input's first N rows; backward the
// input's gradient is dy there and zero elsewhere.
void OnednnRunner::BuildFirstToken(int i, const Layer& l) {
  const int x = l.inputs[0];
  const memory rows = PlainRows(x);
  const int64_t batch = l.shape[0];
  owners_.push_back(rows);
  out_[i] = Rows(rows, 0, batch);
  if (Grad(i)) diff_[i] = Make(out_[i].get_desc());
  if (!Grad(x)) return;
  memory grad = GradTarget(x, i, diff_[x].get_desc());
  const size_t first = out_[i].get_desc().get_size();
  const size_t all = grad.get_desc().get_size();
  Push(backward_[i], OpClass::kMovement, "first token gradient",
       [grad, first, all] {
         std::memset(static_cast<char*>(grad.get_data_handle()) + first, 0,
                     all - first);
       });
  Reorder(backward_[i], diff_[i], Rows(grad, 0, batch), false);
  Deliver(x, i, grad);
}

}  // namespace paradnn::onednn
