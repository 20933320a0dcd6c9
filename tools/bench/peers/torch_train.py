#!/usr/bin/python3
"""PyTorch peer for `strata_bench train`: trains the model of a Strata job
config with PyTorch on the same data, batch, optimizer and thread count, and
reports training images per second as JSON.

Run with Debian's interpreter (/usr/bin/python3, python3-torch 1.13). The
benchmark tool sets the environment that gives PyTorch its best speed
(OPENBLAS_NUM_THREADS/OMP_NUM_THREADS and glibc malloc tuning).

    /usr/bin/python3 torch_train.py --config configs/fashion_mnist.json \
        --steps 300 --threads 2 --json out.json
    /usr/bin/python3 torch_train.py --config C --check-inputs F --json out.json
        (strata_bench's same-computation check: parameter count and the
        first-batch loss from Strata's initial weights)
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndims = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndims).reshape(dims)


def load_train_data(data_cfg, input_shape, classes, size):
    """Returns (images NCHW float32 normalised, labels int64)."""
    if data_cfg["dataset"] in ("fashion_mnist", "mnist"):
        d = data_cfg["path"]
        pick = lambda stem: os.path.join(d, stem + ".gz") if os.path.exists(
            os.path.join(d, stem + ".gz")) else os.path.join(d, stem)
        images = read_idx(pick("train-images-idx3-ubyte"))[:, :, :, None]
        labels = read_idx(pick("train-labels-idx1-ubyte")).astype(np.int64)
    else:  # synthetic or other: random data of the model's shape
        rng = np.random.default_rng(1)
        images = rng.integers(0, 256, size=(size, *input_shape), dtype=np.uint8)
        labels = rng.integers(0, classes, size=size).astype(np.int64)
    mean = np.array(data_cfg.get("mean", [0.0]), dtype=np.float32)
    std = np.array(data_cfg.get("std", [1.0]), dtype=np.float32)
    x = (images.astype(np.float32) / 255.0 - mean) / std  # NHWC
    x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))      # NCHW
    return torch.from_numpy(x), torch.from_numpy(labels)


class Residual(nn.Module):
    """Strata's residual layer: body(x) + shortcut(x), the shortcut being
    the identity when it has no layers."""

    def __init__(self, body, shortcut):
        super().__init__()
        self.body = body
        self.shortcut = shortcut

    def forward(self, x):
        return self.body(x) + (self.shortcut(x) if len(self.shortcut) else x)


def build_layers(specs, shape, device=None):
    """PyTorch modules for a list of Strata layer entries over input `shape`
    (c, h, w), their parameters on `device`; returns (modules, output shape)."""
    c, h, w = shape
    layers = []
    flattened = None  # (c, h, w) flattened just before, for the next linear
    for spec in specs:
        t = spec["type"]
        if t == "conv2d":
            k, s, p = spec.get("kernel", 3), spec.get("stride", 1), spec.get("padding", 0)
            layers.append(nn.Conv2d(c, spec["out_channels"], k, s, p, bias=spec.get("bias", True),
                                    device=device))
            h, w, c = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1, spec["out_channels"]
        elif t in ("maxpool2d", "avgpool2d"):
            k = spec.get("kernel", 2)
            s = spec.get("stride", 0) or k
            p = spec.get("padding", 0)
            cls = nn.MaxPool2d if t == "maxpool2d" else nn.AvgPool2d
            layers.append(cls(k, s, p) if t == "maxpool2d" else cls(k, s, p, count_include_pad=False))
            h, w = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        elif t == "global_avgpool":
            layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
            h = w = 1
        elif t == "batchnorm2d":
            layers.append(nn.BatchNorm2d(c, eps=spec.get("epsilon", 1e-5),
                                         momentum=spec.get("momentum", 0.1), device=device))
        elif t == "relu":
            layers.append(nn.ReLU())
        elif t == "flatten":
            layers.append(nn.Flatten())
            flattened = (c, h, w)
            c, h, w = c * h * w, 1, 1
        elif t == "linear":
            layers.append(nn.Linear(c * h * w, spec["out_features"], device=device))
            if flattened is not None and flattened[1] * flattened[2] > 1:
                layers[-1].strata_nhwc_input = flattened  # Strata flattens NHWC, PyTorch NCHW
            flattened = None
            c, h, w = spec["out_features"], 1, 1
        elif t == "dropout":
            layers.append(nn.Dropout(spec.get("p", 0.5)))
        elif t == "residual":
            body, out = build_layers(spec["body"], (c, h, w), device)
            shortcut, _ = build_layers(spec.get("shortcut", []), (c, h, w), device)
            layers.append(Residual(nn.Sequential(*body), nn.Sequential(*shortcut)))
            c, h, w = out
        else:
            raise SystemExit(f"torch_train.py: layer type {t!r} has no PyTorch mapping")
    return layers, (c, h, w)


def build_model(model_cfg, device=None):
    h, w, c = model_cfg["input"]
    layers, _ = build_layers(model_cfg["layers"], (c, h, w), device)
    return nn.Sequential(*layers)


TORCHVISION = ("alexnet", "vgg16", "resnet18", "resnet50")


def reference_model(cfg):
    """(module, description): torchvision's definition of the config's
    model where torchvision has it at the size it was defined for (the
    config names it and has its 224x224x3 input), else the config's layers.
    Either way the parameters come in Strata's order."""
    model_cfg = cfg["model"]
    name = cfg.get("name", "")
    if name not in TORCHVISION or model_cfg["input"] != [224, 224, 3]:
        return build_model(model_cfg), "the config's layers"
    import torchvision
    model = getattr(torchvision.models, name)(num_classes=model_cfg["classes"])
    # Strata flattens the trunk's image NHWC: mark the first linear layer
    # as the config's own translation does (AlexNet's and VGG's heads); that
    # translation is only looked at, so its parameters take no memory.
    flattened = next((m.strata_nhwc_input for m in build_model(model_cfg, "meta").modules()
                      if hasattr(m, "strata_nhwc_input")), None)
    if flattened is not None:
        first = next(m for m in model.modules() if isinstance(m, nn.Linear))
        first.strata_nhwc_input = flattened
    return model, f"torchvision {torchvision.__version__} {name}"


def check_same_computation(model, path, input_hwc, json_path):
    """Loads Strata's initial parameters and first batch (strata_bench's
    check file: int64 P, int64 B, P floats, B NHWC images, B int32 labels)
    and writes our parameter count and the batch's loss in evaluation mode."""
    ours = sum(p.numel() for p in model.parameters())
    result = {"peer": "pytorch", "parameters": ours}
    with open(path, "rb") as f:
        header = np.frombuffer(f.read(16), dtype=np.int64)
        theirs, batch = int(header[0]), int(header[1])
        if theirs == ours:
            flat = np.frombuffer(f.read(4 * theirs), dtype=np.float32)
            at = 0
            with torch.no_grad():
                for m in model.modules():
                    for name, p in m.named_parameters(recurse=False):
                        v = torch.from_numpy(flat[at:at + p.numel()].copy())
                        at += p.numel()
                        chw = getattr(m, "strata_nhwc_input", None)
                        if name == "weight" and chw is not None:
                            c, h, w = chw  # columns (h, w, c) -> (c, h, w)
                            v = v.view(-1, h, w, c).permute(0, 3, 1, 2).reshape(p.shape)
                        p.copy_(v.view(p.shape))
            h, w, c = input_hwc
            images = np.frombuffer(f.read(4 * batch * h * w * c), dtype=np.float32)
            labels = np.frombuffer(f.read(4 * batch), dtype=np.int32)
            x = torch.from_numpy(images.reshape(batch, h, w, c).transpose(0, 3, 1, 2).copy())
            model.eval()
            with torch.no_grad():
                loss = nn.CrossEntropyLoss()(model(x), torch.from_numpy(labels.astype(np.int64)))
            result["first_loss"] = float(loss)
    with open(json_path, "w") as out:
        out.write(json.dumps(result) + "\n")
    print(json.dumps(result))


def make_optimizer(cfg, params):
    o = cfg["optimizer"]
    if o["type"] == "sgd":
        return torch.optim.SGD(params, lr=o["lr"], momentum=o.get("momentum", 0.0),
                               nesterov=o.get("nesterov", False),
                               weight_decay=o.get("weight_decay", 0.0))
    cls = torch.optim.AdamW if o["type"] == "adamw" else torch.optim.Adam
    return cls(params, lr=o["lr"], betas=(o.get("beta1", 0.9), o.get("beta2", 0.999)),
               eps=o.get("epsilon", 1e-8), weight_decay=o.get("weight_decay", 0.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=0)
    ap.add_argument("--channels-last", action="store_true",
                    help="NHWC memory format (oneDNN's blocked path is often faster)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--tf32", type=int, default=0,
                    help="on a GPU: TensorFloat-32 in convolutions and matrix products (1) or not")
    ap.add_argument("--json", default="")
    ap.add_argument("--check-inputs", default="",
                    help="only check that we compute what Strata does (strata_bench's file)")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    if on_gpu:
        # cuDNN's fastest algorithm found per shape (Strata's does the same),
        # and TF32 as Strata's switch says.
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = bool(args.tf32)
        torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    with open(args.config) as f:
        cfg = json.load(f)
    if args.check_inputs:
        return check_same_computation(reference_model(cfg)[0], args.check_inputs,
                                      cfg["model"]["input"], args.json)
    batch = args.batch_size or cfg.get("training", {}).get("batch_size", 64)
    model_cfg = cfg["model"]
    x, y = load_train_data(cfg["data"], model_cfg["input"], model_cfg["classes"],
                           max(batch * args.steps, 1024))
    model, description = reference_model(cfg)
    print(f"torch_train.py: {description}, {sum(p.numel() for p in model.parameters())} "
          "parameters", file=sys.stderr)
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = make_optimizer(cfg, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    n = x.shape[0]
    perm = torch.randperm(n).to(device)
    steps_per_epoch = n // batch

    def step(i):
        j = i % steps_per_epoch
        idx = perm[j * batch:(j + 1) * batch]
        xb, yb = x[idx], y[idx]
        if args.channels_last:
            xb = xb.contiguous(memory_format=torch.channels_last)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    if on_gpu:
        # cudnn.benchmark times its algorithms on the first steps of each
        # shape: those are not the steady state timed below.
        for i in range(5):
            step(i)
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    for i in range(args.steps):
        loss = step(i)
    final_loss = float(loss)  # waits for the GPU
    seconds = time.perf_counter() - start
    result = {"peer": "pytorch", "torch_version": torch.__version__, "steps": args.steps,
              "batch_size": batch, "threads": args.threads, "channels_last": args.channels_last,
              "device": str(device), "train_seconds": seconds,
              "images_per_sec": args.steps * batch / seconds, "final_loss": final_loss}
    if on_gpu:
        result.update({"gpu": torch.cuda.get_device_name(device), "tf32": bool(args.tf32),
                       "peak_memory_bytes": torch.cuda.max_memory_allocated(device)})
    text = json.dumps(result)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
