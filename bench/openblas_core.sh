# Sourced by the bench scripts that run LibTorch's BLAS outside paradnn's
# backend (PyTorch eager, a loop by hand, a bare GEMM), after the build: both
# sides must multiply with the same OpenBLAS kernels, and paradnn's backend
# runs others than OpenBLAS's own choice where OpenBLAS does not know the CPU
# (docs/architecture.md, "LibTorch's BLAS kernels"). So, unless the caller
# named them, everything runs under the kernels paradnn's context names.
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  OPENBLAS_CORETYPE=$("$root/build/paradnn" \
    --paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/fp32/infer \
    --paradnn_steps=1 --paradnn_progress=false --benchmark_format=json \
    2>/dev/null | python3 -c '
import json, re, sys
m = re.search(r"OpenBLAS core (\w+)",
              json.load(sys.stdin)["context"]["paradnn_backend_torch"])
print(m.group(1) if m else "")')
  if [[ -n $OPENBLAS_CORETYPE ]]; then export OPENBLAS_CORETYPE; fi
fi
