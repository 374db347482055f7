// The oneDNN backend: what it supports, its runner, its description.
#include <oneapi/dnnl/dnnl_version.h>

#include "backends/onednn/onednn_backend.h"
#include "backends/onednn/padded_reorder.h"
#include "backends/onednn/runner.h"

namespace paradnn {
namespace {

using onednn::OnednnRunner;
using onednn::PaddedReordersExact;

class OnednnBackend : public Backend {
 public:
  std::string name() const override { return "onednn"; }

  std::string Unsupported(const Job& job) const override {
    if (job.dtype == DType::kFp16) {
      return "onednn: fp16 is a GPU data type here (torch_cuda); this "
             "backend runs fp32 and bf16 on the CPU";
    }
    if (job.dtype == DType::kBf16 &&
        dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core) {
      return "onednn: bf16 needs a CPU with AVX-512 (avx512_core) or newer";
    }
    if (job.dtype == DType::kBf16 && job.mode == Mode::kTrain) {
      for (const Layer& l : job.graph.layers()) {
        // GRU: no bf16 backward descriptor; RNN and LSTM: none with the
        // explicit initial state their correct gradients need (see
        // BuildRecurrent).
        if (l.op == Op::kRecurrent) {
          return "onednn: oneDNN " + Version() +
                 " has no correct bf16 backward for " + ToString(l.cell) +
                 " cells";
        }
      }
    }
    return "";
  }

  std::unique_ptr<Runner> Prepare(const Job& job,
                                  const RunOptions& opt) const override {
    try {
      return std::make_unique<OnednnRunner>(job, opt);
    } catch (const dnnl::error& e) {
      throw std::runtime_error(std::string("oneDNN: ") + e.what());
    }
  }

  // A product's bias, activations and residual sum as post-ops, a batch
  // norm folded into its convolution (FusedAttr, FoldBatchNorm).
  Fusion InferenceFusion() const override { return Fusion::kFull; }

  // oneDNN's own products: the matmul primitive and the inner product the
  // dense layers run (which on some shapes beats matmul), in the formats
  // each picks; the faster of the two.
  double GemmFlops(int64_t m, int64_t n, int64_t k, DType dtype, int threads,
                   bool tf32) const override {
    // fp16 and TF32 are the GPUs' (Unsupported()).
    if (dtype == DType::kFp16 || tf32) return 0;
    const bool bf16 = dtype == DType::kBf16;
    if (bf16 && dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core) {
      return 0;
    }
    omp_set_num_threads(threads);
    using dnnl::memory;
    using Tag = memory::format_tag;
    const memory::data_type dt =
        bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const double matmul = Time<dnnl::matmul>(
        onednn::MatmulPd(engine, {{m, k}, dt, Tag::ab}, {{k, n}, dt, Tag::any},
                         {{m, n}, dt, Tag::ab}),
        engine);
    const memory::desc src({m, k}, dt, Tag::any), weights({n, k}, dt, Tag::any),
        dst({m, n}, dt, Tag::any);
    const double inner = Time<dnnl::inner_product_forward>(
        onednn::InnerProductPd(engine, dnnl::prop_kind::forward_inference, src,
                               weights, nullptr, dst),
        engine);
    return 2.0 * m * n * k / std::min(matmul, inner);
  }

  std::string Describe() const override {
    // A run says when its padded layouts are reordered by paradnn's element
    // copy, which is slower than oneDNN's (padded_reorder.h).
    return "oneDNN " + Version() + ", CPU runtime OpenMP, ISA " + IsaName() +
           (PaddedReordersExact()
                ? ""
                : ", padded layouts reordered element by element (oneDNN's "
                  "reorders are wrong on this CPU)");
  }

 private:
  // Seconds of one run of a product primitive, best of a few, on zeroed
  // buffers in the formats its descriptor chose.
  template <typename Primitive>
  static double Time(const typename Primitive::primitive_desc& pd,
                     const dnnl::engine& engine) {
    dnnl::stream stream(engine);
    dnnl::memory src(pd.src_desc(), engine), weights(pd.weights_desc(), engine),
        dst(pd.dst_desc(), engine);
    for (dnnl::memory* buffer : {&src, &weights}) {
      std::memset(buffer->get_data_handle(), 0, buffer->get_desc().get_size());
    }
    const Primitive primitive(pd);
    return BestSeconds([&] {
      primitive.execute(stream, {{DNNL_ARG_SRC, src},
                                 {DNNL_ARG_WEIGHTS, weights},
                                 {DNNL_ARG_DST, dst}});
      stream.wait();
    });
  }

  static std::string Version() {
    const dnnl_version_t* v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch);
  }

  static std::string IsaName() {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx512_core_amx:
        return "avx512_core_amx";
      case dnnl::cpu_isa::avx512_core_bf16:
        return "avx512_core_bf16";
      case dnnl::cpu_isa::avx512_core_vnni:
        return "avx512_core_vnni";
      case dnnl::cpu_isa::avx512_core:
        return "avx512_core";
      case dnnl::cpu_isa::avx2_vnni:
        return "avx2_vnni";
      case dnnl::cpu_isa::avx2:
        return "avx2";
      default:
        return "other";
    }
  }
};

}  // namespace

std::unique_ptr<Backend> MakeOnednnBackend() {
  return std::make_unique<OnednnBackend>();
}

}  // namespace paradnn
