// Plain fp32 GEMMs through the BLAS that LibTorch uses (libblas.so.3) and
// through oneDNN, next to paradnn's cases in the same binary and run.
//   gemm_bench --benchmark_filter='Sgemm|FC/' --paradnn_case=FC/...
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <paradnn/paradnn.h>

#include <thread>
#include <vector>

extern "C" void sgemm_(const char* transa, const char* transb, const int* m,
                       const int* n, const int* k, const float* alpha,
                       const float* a, const int* lda, const float* b,
                       const int* ldb, const float* beta, float* c,
                       const int* ldc);

// C[m x n] = A[m x k] * B[k x n], all column-major.
static void BM_Sgemm(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const int k = static_cast<int>(state.range(2));
  omp_set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(k) * n, 0.25f),
      c(size_t(m) * n);
  const float alpha = 1, beta = 0;
  for (auto _ : state) {
    sgemm_("N", "N", &m, &n, &k, &alpha, a.data(), &m, b.data(), &k, &beta,
           c.data(), &m);
  }
  state.counters["FLOPS"] = benchmark::Counter(
      2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Sgemm)
    ->Args({1024, 4096, 4096})
    ->Args({4096, 4096, 4096})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The same product through oneDNN's GEMM (row-major).
static void BM_DnnlSgemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  omp_set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(k) * n, 0.25f),
      c(size_t(m) * n);
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', m, n, k, 1.f, a.data(), k, b.data(), n, 0.f,
               c.data(), n);
  }
  state.counters["FLOPS"] = benchmark::Counter(
      2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DnnlSgemm)
    ->Args({1024, 4096, 4096})
    ->Args({4096, 4096, 4096})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  return paradnn::Finish();
}
