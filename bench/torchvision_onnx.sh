#!/usr/bin/env bash
# Exports torchvision's models (untrained, seeded) as DIR/NAME.onnx with
# PyTorch's own exporter, in training mode with their random layers
# (dropout, stochastic depth) in eval mode, as the layer graph has them
# (TORCHVISION_ONNX_MODE=infer: the inference export an engine is given,
# batch norm folded into the convolutions and the batch dynamic), and
# writes DIR/models.yaml: a sweep of those files at the batch sizes given,
# on both backends, in fp32, train and infer (the other flags of a run
# change that: --paradnn_dtypes=fp32,bf16 ...). Inception v3 and GoogLeNet
# without their auxiliary classifiers, which train only (the exporter
# cannot write GoogLeNet's); Inception v3 at its 299 x 299. Segmentation
# models by their module's name (segmentation.fcn_resnet50), without
# pretrained backbones, traced at two examples (DeepLabV3's image pooling
# normalizes one value per channel and example, which PyTorch refuses to
# train on one). Video models likewise (video.r3d_18), on clips of 16
# frames of 112 x 112, as torchvision's are trained. torchaudio's models
# by their name there (torchaudio.wav2vec2_base), their dropouts and layer
# drop off, on a second of 16 kHz audio. A model the exporter
# cannot write is named on stderr with the exporter's error and left out.
#   bench/torchvision_onnx.sh DIR BATCHES NAME...   (BATCHES: "2, 8")
set -euo pipefail
dir=$1
batches=$2
shift 2
mkdir -p "$dir"
{
  echo "backends: [torch, onednn]"
  echo "dtypes: [fp32]"
  echo "modes: [train, infer]"
  echo "sweeps:"
} >"$dir/models.yaml"
for m in "$@"; do
  if ! /usr/bin/python3 - "$dir/$m.onnx" "$m" "${TORCHVISION_ONNX_MODE:-train}" \
    >"$dir/$m.log" 2>&1 <<'PY'
import functools, sys, torch, torchvision
torch.manual_seed(0)
name = sys.argv[2]
inception = ("inception_v3", "googlenet")
segmentation = name.startswith("segmentation.")
audio = name.startswith("torchaudio.")
kwargs = dict(aux_logits=False, init_weights=True) if name in inception else {}
if segmentation:
    kwargs = dict(weights_backbone=None)
if audio:
    kwargs = dict(encoder_projection_dropout=0.0, encoder_attention_dropout=0.0,
                  encoder_ff_interm_dropout=0.0, encoder_dropout=0.0,
                  encoder_layer_drop=0.0)
if audio:
    import torchaudio
models = torchaudio.models if audio else torchvision.models
path = name.split(".")[1:] if audio else name.split(".")
m = functools.reduce(getattr, path, models)(**kwargs)
size = 299 if name == "inception_v3" else 224
x = torch.randn(2 if segmentation else 1, 3, size, size)
if name.startswith("video."):
    x = torch.randn(1, 3, 16, 112, 112)
if audio:
    x = torch.randn(1, 16000)
if sys.argv[3] == "infer":
    m.eval()
    torch.onnx.export(m, x, sys.argv[1], input_names=["input"],
                      dynamic_axes={"input": {0: "batch"}},
                      do_constant_folding=True, opset_version=14)
    sys.exit()
m.train()
for d in m.modules():
    if isinstance(d, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
        d.eval()
torch.onnx.export(m, x, sys.argv[1],
                  training=torch.onnx.TrainingMode.PRESERVE,
                  do_constant_folding=False, opset_version=14)
PY
  then
    # PyTorch's exporter cannot write some models in some modes: the sweep
    # goes on without them.
    echo "torchvision_onnx: $m not exported; see $dir/$m.log:" \
      "$(grep -E '^[A-Za-z_.]+(Error|Exception): ' "$dir/$m.log" | tail -1 | cut -c1-200)" >&2
    continue
  fi
  printf '  - onnx: %s.onnx\n    batch: [%s]\n' "$m" "$batches" >>"$dir/models.yaml"
done
