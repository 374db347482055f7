#!/usr/bin/python3
"""The models of paradnn's case names, written the usual way in PyTorch eager
Python, timed per step. Prints JSON {case name: seconds per step}; with
BENCHMARK_OUT set (as `paradnn compare --run-a` sets it), also writes the
times there as Google Benchmark JSON, one run per case. An ONNX file's case
(NAME.onnx/batch:B/...) is torchvision's model NAME on 224x224 images, the
file being its export (bench/onnx_models.sh); its random layers (dropout,
stochastic depth) train in eval mode, as the file's graph has them.
Inference runs as PyTorch's tuning guide has CPU inference run, and as the
LibTorch backend does: batch norms folded into their convolutions
(torch.fx's fuse), images and weights channels-last.

    /usr/bin/python3 bench/pytorch_eager.py --threads 2 NAME [NAME ...]
"""
import argparse
import json
import os
import re
import time

import torch
from torch import nn


def parse(name):
    parts = name.split("/")
    params = dict(p.split(":") for p in parts[1:-3])
    return parts[0], params, parts[-3], parts[-2], parts[-1]


def conv_bn(cin, cout, k, stride):
    return [nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
            nn.BatchNorm2d(cout)]


class Block(nn.Module):
    def __init__(self, cin, filters, stride, bottleneck, project):
        super().__init__()
        out = 4 * filters if bottleneck else filters
        if bottleneck:
            layers = (conv_bn(cin, filters, 1, 1) + [nn.ReLU()] +
                      conv_bn(filters, filters, 3, stride) + [nn.ReLU()] +
                      conv_bn(filters, out, 1, 1))
        else:
            layers = (conv_bn(cin, filters, 3, stride) + [nn.ReLU()] +
                      conv_bn(filters, filters, 3, 1))
        self.body = nn.Sequential(*layers)
        self.shortcut = (nn.Sequential(*conv_bn(cin, out, 1, stride))
                         if project else nn.Identity())
        self.out = out

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class Cnn(nn.Module):
    def __init__(self, p):
        super().__init__()
        f, bottleneck = int(p["filters"]), p["block"] == "bottleneck"
        layers = conv_bn(3, f, 7, 2) + [nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        cin = f
        for group, stride in enumerate([1, 2, 2, 2]):
            for b in range(int(p["blocks"])):
                block = Block(cin, f << group, stride if b == 0 else 1,
                              bottleneck, b == 0)
                layers.append(block)
                cin = block.out
        self.features = nn.Sequential(*layers)
        self.dense = nn.Linear(cin, int(p["output"]))

    def forward(self, x):
        return self.dense(self.features(x).mean((2, 3)))


class Rnn(nn.Module):
    def __init__(self, p):
        super().__init__()
        e, v = int(p["embed"]), int(p["vocab"])
        cell = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[p["cell"]]
        self.embedding = nn.Embedding(v, e)
        self.cells = nn.ModuleList(cell(e, e) for _ in range(int(p["layers"])))
        self.dense = nn.Linear(e, v)

    def forward(self, x):
        x = self.embedding(x)
        for c in self.cells:
            x, _ = c(x)
        return self.dense(x)


class RmsNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * \
            self.weight


def rope(x, heads, cos, sin):
    length, batch, units = x.shape
    half = units // heads // 2
    h = x.view(length, batch, heads, 2 * half)
    a, b = h[..., :half], h[..., half:]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), 3).view(
        length, batch, units)


class Decoder(nn.Module):
    """A Llama block serving from its key/value cache: the new keys and
    values written in place, each key/value head's group of query heads as
    one batch of products over the cache (no copy of it per query head)."""

    def __init__(self, p, length):
        super().__init__()
        d, heads, kv = int(p["d_model"]), int(p["heads"]), int(p["kv_heads"])
        ffn, context, batch = int(p["ffn"]), int(p["context"]), int(p["batch"])
        self.heads, self.kv, self.dh = heads, kv, d // heads
        self.first = context - length
        self.norm1, self.norm2 = RmsNorm(d), RmsNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv * self.dh, bias=False)
        self.v = nn.Linear(d, kv * self.dh, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)
        shape = (batch, kv, context, self.dh)
        self.register_buffer("keys", torch.rand(shape) * 2 - 1)
        self.register_buffer("values", torch.rand(shape) * 2 - 1)
        query = torch.arange(length).add(self.first).unsqueeze(1)
        mask = torch.arange(context).unsqueeze(0).gt(query)
        self.register_buffer("mask", mask.repeat(heads // kv, 1)
                             if length > 1 else None)

    def forward(self, x, cos, sin):
        length, batch, d = x.shape
        group = self.heads // self.kv
        h = self.norm1(x)
        q = rope(self.q(h), self.heads, cos, sin)
        k = rope(self.k(h), self.kv, cos, sin)
        v = self.v(h)
        self.keys[:, :, self.first:] = \
            k.view(length, batch, self.kv, self.dh).permute(1, 2, 0, 3)
        self.values[:, :, self.first:] = \
            v.view(length, batch, self.kv, self.dh).permute(1, 2, 0, 3)
        queries = q.view(length, batch, self.kv, group, self.dh).permute(
            1, 2, 3, 0, 4).reshape(batch, self.kv, group * length, self.dh)
        scores = torch.matmul(queries, self.keys.transpose(2, 3)).mul_(
            self.dh ** -0.5)
        if self.mask is not None:
            scores.masked_fill_(self.mask, float("-inf"))
        a = torch.matmul(torch.softmax(scores, -1), self.values).view(
            batch, self.kv, group, length, self.dh).permute(
            3, 0, 1, 2, 4).reshape(length, batch, d)
        x = x + self.o(a)
        n = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(n)) * self.up(n))


class Llm(nn.Module):
    def __init__(self, p):
        super().__init__()
        d, heads, vocab = int(p["d_model"]), int(p["heads"]), int(p["vocab"])
        context = int(p["context"])
        length = context if p["phase"] == "prefill" else 1
        self.embedding = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Decoder(p, length)
                                    for _ in range(int(p["layers"])))
        self.norm = RmsNorm(d)
        self.out = nn.Linear(d, vocab, bias=False)
        half = d // heads // 2
        position = torch.arange(context - length, context,
                                dtype=torch.float64).unsqueeze(1)
        angle = position * 500000.0 ** (
            -torch.arange(half, dtype=torch.float64) / half)
        angle = angle.view(length, 1, 1, half)
        self.register_buffer("cos", angle.cos().float())
        self.register_buffer("sin", angle.sin().float())

    def forward(self, tokens):
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x, self.cos, self.sin)
        return self.out(self.norm(x[-1:]))


def build(family, p):
    if family == "FC":
        layers, width = [], int(p["input"])
        for _ in range(int(p["layers"])):
            layers += [nn.Linear(width, int(p["nodes"])), nn.ReLU()]
            width = int(p["nodes"])
        layers.append(nn.Linear(width, int(p["output"])))
        model = nn.Sequential(*layers)
        x = torch.rand(int(p["batch"]), int(p["input"])) * 2 - 1
        classes, rows = int(p["output"]), int(p["batch"])
    elif family == "CNN":
        model = Cnn(p)
        image = int(p["image"])
        x = torch.rand(int(p["batch"]), 3, image, image) * 2 - 1
        classes, rows = int(p["output"]), int(p["batch"])
    elif family == "LLM":
        model = Llm(p)
        classes = int(p["vocab"])
        length = int(p["context"]) if p["phase"] == "prefill" else 1
        x = torch.randint(classes, (length, int(p["batch"])))
        rows = int(p["batch"])
    elif family.endswith(".onnx"):
        import torchvision
        model = getattr(torchvision.models, family[:-len(".onnx")])()
        x = torch.rand(int(p["batch"]), 3, 224, 224) * 2 - 1
        classes, rows = 1000, int(p["batch"])
    else:
        model = Rnn(p)
        classes = int(p["vocab"])
        x = torch.randint(classes, (int(p["length"]), int(p["batch"])))
        rows = int(p["length"]) * int(p["batch"])
    return model, x, torch.randint(classes, (rows,)), classes


def time_case(name, min_seconds):
    family, p, _, dtype, mode = parse(name)
    model, x, y, classes = build(family, p)
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
        if x.is_floating_point():
            x = x.to(torch.bfloat16)
    loss_fn = nn.CrossEntropyLoss()
    if mode == "train":
        model.train()
        for m in model.modules():
            if isinstance(m, nn.Dropout) or type(m).__name__ == "StochasticDepth":
                m.eval()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def step():
            # Released, not filled: what paradnn's LibTorch step does.
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x).reshape(-1, classes), y)
            loss.backward()
            opt.step()
    else:
        model.eval()
        # PyTorch's guidance for CPU inference, as the LibTorch backend runs
        # it: batch norms folded into the convolutions before them, images
        # and weights channels-last (bf16 stays as the backend has it).
        if any(isinstance(m, nn.Conv2d) for m in model.modules()):
            from torch.fx.experimental.optimization import fuse
            model = fuse(model)
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)

        def step():
            with torch.inference_mode():
                model(x)
    step()
    step()
    n, start = 0, time.perf_counter()
    while True:
        step()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and n >= 3:
            return elapsed / n


def onednn_misreads_caches():
    """PyTorch's oneDNN 3 or later on an AMD CPU without the topology
    extensions, whose cache sizes it misreads: the LibTorch backend then
    turns its oneDNN off, and so does this script
    (TorchOneDnnMisreadsCaches, backends/torch/torch_backend.h)."""
    with open("/proc/cpuinfo") as f:
        info = f.read()
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                  if line.startswith("flags")), [])
    version = re.search(r"MKL-DNN v(\d+)", torch.__config__.show())
    return ("AuthenticAMD" in info and "topoext" not in flags and
            version is not None and int(version.group(1)) >= 3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--min_seconds", type=float, default=1.0)
    ap.add_argument("names", nargs="+")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if onednn_misreads_caches():
        torch.backends.mkldnn.enabled = False
    times = {n: time_case(n, args.min_seconds) for n in args.names}
    print(json.dumps(times))
    if os.environ.get("BENCHMARK_OUT"):
        runs = [{"name": n, "run_name": n, "run_type": "iteration",
                 "repetitions": 1, "repetition_index": 0, "iterations": 1,
                 "real_time": t * 1e3, "cpu_time": t * 1e3,
                 "time_unit": "ms", "step_ms": t * 1e3}
                for n, t in times.items()]
        context = {"executable": "bench/pytorch_eager.py",
                   "torch": torch.__version__, "threads": args.threads}
        with open(os.environ["BENCHMARK_OUT"], "w") as out:
            json.dump({"context": context, "benchmarks": runs}, out, indent=1)


if __name__ == "__main__":
    main()
