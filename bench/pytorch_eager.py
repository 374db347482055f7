#!/usr/bin/python3
"""The models of paradnn's case names, written the usual way in PyTorch eager
Python, timed per step. Prints JSON {case name: seconds per step}.

    /usr/bin/python3 bench/pytorch_eager.py --threads 2 NAME [NAME ...]
"""
import argparse
import json
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
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def step():
            # Released, not filled: what paradnn's LibTorch step does.
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x).reshape(-1, classes), y)
            loss.backward()
            opt.step()
    else:
        model.eval()

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--min_seconds", type=float, default=1.0)
    ap.add_argument("names", nargs="+")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(json.dumps({n: time_case(n, args.min_seconds) for n in args.names}))


if __name__ == "__main__":
    main()
