// oneDNN backend. Recurrent layers: vanilla RNN, LSTM, linear-before-reset GRU.
#include "backends/onednn/runner.h"

namespace paradnn::onednn {

void OnednnRunner::BuildRecurrent(int i, const Layer& l) {
  const int x = l.inputs[0];
  const Dims in_dims = DimsOf(out_[x].get_desc());
  const int64_t T = in_dims[0], N = in_dims[1], C = in_dims[2];
  const int64_t H = l.units;
  const int64_t G = Gates(l.cell);
  const int64_t bias_gates = l.cell == Cell::kGru ? 4 : G;
  const memory::desc src_md({T, N, C}, dt_, Tag::tnc);
  const memory::desc dst_md({T, N, H}, dt_, Tag::tnc);
  const memory::desc wl_any({1, 1, C, G, H}, dt_, Tag::any);
  const memory::desc wi_any({1, 1, H, G, H}, dt_, Tag::any);
  const memory::desc bias_md({1, 1, bias_gates, H}, Dt::f32, Tag::ldgo);
  const memory::desc none;  // a zero initial state
  const auto dir = dnnl::rnn_direction::unidirectional_left2right;
  if (out_[x].get_desc() != src_md) {
    throw std::runtime_error("recurrent input is not in tnc format");
  }

  // Backward wants its own weight formats (oneDNN picks ldgoi there).
  const memory::desc dwl_any({1, 1, C, G, H}, Dt::f32, Tag::any);
  const memory::desc dwi_any({1, 1, H, G, H}, Dt::f32, Tag::any);
  // oneDNN 2.6's RNN and LSTM backward take h_t for h_(t-1) in the
  // recurrent weights' gradient when the initial state is omitted (a zero
  // md); an explicit zero state gives the right one. bf16 has no backward
  // with one, so bf16 (inference only, see Unsupported()) omits it.
  const bool explicit_state = dt_ == Dt::f32;
  const memory::desc iter_md =
      explicit_state ? memory::desc({1, 1, N, H}, dt_, Tag::ldnc) : none;
  const memory::desc iter_c_md = iter_md;
  const memory::desc diff_iter_md = iter_md;
  memory zero_state, zero_cell;
  if (explicit_state) {
    zero_state = Make(iter_md);
    zero_cell = Make(iter_c_md);
    std::memset(zero_state.get_data_handle(), 0, iter_md.get_size());
    std::memset(zero_cell.get_data_handle(), 0, iter_c_md.get_size());
  }
  const RecurrentShapes f{src_md, iter_md, iter_c_md, wl_any,
                          wi_any, bias_md, dst_md};
  const RecurrentShapes grads{src_md,  diff_iter_md, iter_c_md, dwl_any,
                              dwi_any, bias_md,      dst_md};
  dnnl::primitive fwd, bwd;
  dnnl::rnn_primitive_desc_base fpd, bpd;
  switch (l.cell) {
    case Cell::kRnn: {
      const auto pd = VanillaRnnPd(engine_, Forward(), dir, f);
      fpd = pd;
      fwd = dnnl::vanilla_rnn_forward(pd);
      if (!train_) break;
      const auto b = VanillaRnnBackwardPd(engine_, dir, f, grads, pd);
      bpd = b;
      bwd = dnnl::vanilla_rnn_backward(b);
      break;
    }
    case Cell::kLstm: {
      const auto pd = LstmPd(engine_, Forward(), dir, f);
      fpd = pd;
      fwd = dnnl::lstm_forward(pd);
      if (!train_) break;
      const auto b = LstmBackwardPd(engine_, dir, f, grads, pd);
      bpd = b;
      bwd = dnnl::lstm_backward(b);
      break;
    }
    case Cell::kGru: {
      const auto pd = LbrGruPd(engine_, Forward(), dir, f);
      fpd = pd;
      fwd = dnnl::lbr_gru_forward(pd);
      if (!train_) break;
      const auto b = LbrGruBackwardPd(engine_, dir, f, grads, pd);
      bpd = b;
      bwd = dnnl::lbr_gru_backward(b);
      break;
    }
  }
  const memory::desc wl_md = fpd.weights_layer_desc();
  const memory::desc wi_md = fpd.weights_iter_desc();
  const memory::desc dwl_md = train_ ? bpd.diff_weights_layer_desc() : wl_md;
  const memory::desc dwi_md = train_ ? bpd.diff_weights_iter_desc() : wi_md;
  const memory::desc db_md = bias_md;
  // LibTorch's [gates x hidden, in] matrices are oneDNN's ldgoi layout.
  AddParam(i, "weight_ih", wl_md,
           memory::desc({1, 1, C, G, H}, Dt::f32, Tag::ldgoi), dwl_md);
  AddParam(i, "weight_hh", wi_md,
           memory::desc({1, 1, H, G, H}, Dt::f32, Tag::ldgoi), dwi_md);
  for (const char* role : {"weight_ih", "weight_hh"}) {
    Weight& p = ParamOf(i, role);
    p.gru = l.cell == Cell::kGru;
    p.gate_rows = H;
  }
  RecurrentBias bias;
  bias.ih_index = param_index_.at({i, "bias_ih"});
  bias.hh_index = param_index_.at({i, "bias_hh"});
  bias.cell = l.cell;
  bias.hidden = H;
  bias.combined = Make(bias_md);
  if (train_) bias.grad = MakeGrad(db_md);
  biases_.push_back(bias);
  RecurrentBias& b = biases_.back();

  SetOut(i, dst_md);
  Weight& wl = ParamOf(i, "weight_ih");
  Weight& wi = ParamOf(i, "weight_hh");
  Args args = {{DNNL_ARG_SRC_LAYER, out_[x]},
               {DNNL_ARG_WEIGHTS_LAYER, wl.value},
               {DNNL_ARG_WEIGHTS_ITER, wi.value},
               {DNNL_ARG_BIAS, b.combined},
               {DNNL_ARG_DST_LAYER, out_[i]}};
  if (explicit_state) {
    args[DNNL_ARG_SRC_ITER] = zero_state;
    if (l.cell == Cell::kLstm) args[DNNL_ARG_SRC_ITER_C] = zero_cell;
  }
  if (train_) args[DNNL_ARG_WORKSPACE] = Make(fpd.workspace_desc());
  Run(forward_, fwd, args);
  if (!train_) return;
  memory grad = Grad(x) ? GradTarget(x, i, src_md) : Make(src_md);
  Args bargs = args;
  // The weights as backward reads them, copied after every update.
  for (auto [arg, weight] : {std::pair{DNNL_ARG_WEIGHTS_LAYER, &wl},
                             std::pair{DNNL_ARG_WEIGHTS_ITER, &wi}}) {
    bargs[arg] = InBackward(i, weight->value,
                            bpd.query_md(dnnl::query::exec_arg_md, arg));
  }
  bargs[DNNL_ARG_DIFF_DST_LAYER] = diff_[i];
  bargs[DNNL_ARG_DIFF_SRC_LAYER] = grad;
  bargs[DNNL_ARG_DIFF_WEIGHTS_LAYER] = wl.grad;
  bargs[DNNL_ARG_DIFF_WEIGHTS_ITER] = wi.grad;
  bargs[DNNL_ARG_DIFF_BIAS] = b.grad;
  if (explicit_state) {
    bargs[DNNL_ARG_DIFF_SRC_ITER] = Make(diff_iter_md);
    if (l.cell == Cell::kLstm) {
      bargs[DNNL_ARG_DIFF_SRC_ITER_C] = Make(iter_c_md);
    }
  }
  // oneDNN adds the weight gradients to what the buffers hold.
  Push(backward_[i], OpClass::kMovement, "clear rnn gradients", [&wl, &wi, &b] {
    for (const memory* m : {&wl.grad, &wi.grad, &b.grad}) {
      std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
    }
  });
  Run(backward_[i], bwd, bargs);
  if (Grad(x)) Deliver(x, i, grad);
  Push(update_, OpClass::kOptimizer, "rnn bias", [&b] { b.Update(); });
}

}  // namespace paradnn::onednn
