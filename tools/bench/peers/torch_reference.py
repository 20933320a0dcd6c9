#!/usr/bin/python3
"""PyTorch reference for `strata_bench reference`: builds a Strata job
config's model as its reference defines it (torchvision.models for AlexNet,
VGG-16 and ResNet-18/50 at 224x224; the config's own layers otherwise),
loads Strata's weights by name from Strata's tensor file, runs the same
training-mode forward and backward (dropout off), and writes, per tensor,
max |strata - pytorch| / max |strata| as JSON.

    /usr/bin/python3 torch_reference.py --config configs/resnet18.json \
        --tensors resnet18.tensors --threads 2 --json out.json
"""
import argparse
import copy
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import reference_model  # noqa: E402

def read_tensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for t in header["tensors"]:
        count = int(np.prod(t["shape"])) if t["shape"] else 1
        values = np.frombuffer(data, dtype=np.float32, count=count, offset=t["offset"])
        tensors[t["name"]] = torch.from_numpy(values.reshape(t["shape"]).copy())
    return header, tensors


def nhwc_columns_to_nchw(weight, hwc):
    h, w, c = hwc
    return weight.view(weight.shape[0], h, w, c).permute(0, 3, 1, 2).reshape(weight.shape)


def nchw_columns_to_nhwc(weight, hwc):
    h, w, c = hwc
    return weight.view(weight.shape[0], c, h, w).permute(0, 2, 3, 1).reshape(weight.shape)


def relative(strata, ours):
    scale = float(strata.abs().max())
    return float((strata - ours).abs().max()) / max(scale, 1e-30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--tensors", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open(args.config) as f:
        cfg = json.load(f)
    model, description = reference_model(cfg)
    header, tensors = read_tensors(args.tensors)
    flattened = {f["weight"]: f["hwc"] for f in header.get("nhwc_flatten", [])}

    # torchvision's parameters are found by name (Strata's configs use its
    # module names); the config's own layers by order (both follow the layers).
    strata_names = [t["name"] for t in header["tensors"]
                    if t["name"] not in ("input", "upstream", "output")
                    and not t["name"].endswith(".grad")]
    named = list(model.named_parameters())
    if description.startswith("torchvision"):
        missing = [name for name, _ in named if name not in tensors]
        if missing:
            raise SystemExit(f"torch_reference.py: Strata has no parameter named {missing[0]} "
                             f"({len(missing)} of {len(named)} missing)")
        pairs = [(name, p) for name, p in named]
    else:
        if len(named) != len(strata_names):
            raise SystemExit(f"torch_reference.py: Strata has {len(strata_names)} parameter "
                             f"tensors, the config's PyTorch layers {len(named)}")
        pairs = [(ours, p) for ours, (_, p) in zip(strata_names, named)]
    with torch.no_grad():
        for name, p in pairs:
            v = tensors[name]
            if name in flattened:
                v = nhwc_columns_to_nchw(v, flattened[name])
            if v.shape != p.shape:
                raise SystemExit(f"torch_reference.py: {name} is {list(v.shape)} in Strata, "
                                 f"{list(p.shape)} here")
            p.copy_(v)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    model.train()

    def run(dtype):
        """Forward and backward in `dtype`; every result in Strata's layout."""
        m = copy.deepcopy(model).to(dtype)
        x = tensors["input"].permute(0, 3, 1, 2).to(dtype).contiguous().requires_grad_(True)
        out = m(x)
        out.backward(tensors["upstream"].to(dtype))
        got = {"output": out.detach(), "input.grad": x.grad.permute(0, 2, 3, 1)}
        params = dict(m.named_parameters())
        for (name, _), (torch_name, _) in zip(pairs, named):
            g = params[torch_name].grad
            got[name + ".grad"] = nchw_columns_to_nhwc(g, flattened[name]) if name in flattened else g
        return got

    single, double = run(torch.float32), run(torch.float64)
    rel = {k: relative(tensors[k], v) for k, v in single.items()}
    rel64 = {k: relative(tensors[k].double(), v) for k, v in double.items()}
    own = {k: relative(double[k], v.double()) for k, v in single.items()}
    result = {"peer": "pytorch", "reference": description,
              "parameters": sum(p.numel() for _, p in named), "relative": rel,
              "relative_to_float64": rel64, "pytorch_float32_to_float64": own}
    with open(args.json, "w") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    sys.exit(main())
