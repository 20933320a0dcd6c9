#!/usr/bin/python3
"""PyTorch peers for `strata_bench moe`: forward + backward of one
Mixture-of-Experts layer (top-k gate, capacity, expert FFNs Linear -> ReLU ->
Linear, combine), timed on the inputs strata_bench wrote, in one of two
dispatch styles:

  einsum  GShard / Fairseq: dense one-hot dispatch and combine tensors of
          shape (T, E, C) and einsum over them;
  sparse  index-based (Tutel-like): every routed token is scattered into its
          expert slot by index and gathered back weighted by its gate.

Run with Debian's interpreter (/usr/bin/python3, python3-torch 1.13); the
benchmark tool sets the best thread and malloc environment.

    /usr/bin/python3 torch_moe.py --inputs moe.bin --tokens 4096 --dim 512 \\
        --hidden 1024 --experts 8 --top-k 2 --capacity 1.25 --dispatch sparse \\
        --threads 2 --repeat 5 --json out.json [--outputs y_and_grad.bin]
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def load_inputs(path, t, d, h, e):
    """x {T,D}, gate {E,D}, w1 {E,D,H}, b1 {E,H}, w2 {E,H,D}, b2 {E,D}, float32, in order."""
    flat = np.fromfile(path, dtype=np.float32)
    sizes = [t * d, e * d, e * d * h, e * h, e * h * d, e * d]
    if flat.size != sum(sizes):
        raise SystemExit(f"torch_moe.py: {path} holds {flat.size} floats, expected {sum(sizes)}")
    parts, at = [], 0
    for n in sizes:
        parts.append(flat[at:at + n])
        at += n
    shapes = [(t, d), (e, d), (e, d, h), (e, h), (e, h, d), (e, d)]
    return [torch.from_numpy(p.reshape(s).copy()).requires_grad_(True)
            for p, s in zip(parts, shapes)]


def route(x, gate, k, f):
    """Softmax top-k gate, normalised over k; slot of every choice (first
    choices first, tokens in order); capacity C = k * f * ceil(T / E)."""
    t, e = x.shape[0], gate.shape[0]
    probs = torch.softmax(x @ gate.t(), dim=1)
    weights, experts = probs.topk(k, dim=1)
    weights = weights / weights.sum(dim=1, keepdim=True)
    capacity = int(math.ceil(k * f * math.ceil(t / e)))
    # Locations: running count per expert over choice rank, then token.
    onehot = F.one_hot(experts.t().reshape(-1), e)            # (k*T, E), rank-major
    slots = (onehot.cumsum(dim=0) - 1) * onehot
    slot = slots.sum(dim=1).reshape(k, t).t()                 # (T, k)
    keep = slot < capacity
    return weights, experts, slot, keep, capacity


def experts_ffn(slots, w1, b1, w2, b2):
    """slots {E, C, D} -> {E, C, D}: one batched GEMM per linear."""
    hidden = torch.relu(torch.baddbmm(b1.unsqueeze(1), slots, w1))
    return torch.baddbmm(b2.unsqueeze(1), hidden, w2)


def moe_einsum(x, gate, w1, b1, w2, b2, k, f):
    weights, experts, slot, keep, capacity = route(x, gate, k, f)
    t, e = x.shape[0], gate.shape[0]
    # Dense (T, E, C) combine weights and dispatch mask, GShard style.
    combine = torch.zeros(t, e, capacity)
    for i in range(k):
        sel = keep[:, i]
        combine[sel.nonzero().squeeze(1), experts[sel, i], slot[sel, i]] += weights[sel, i]
    dispatch = (combine > 0).to(x.dtype)
    slots = torch.einsum("tec,td->ecd", dispatch, x)
    out = experts_ffn(slots, w1, b1, w2, b2)
    return torch.einsum("tec,ecd->td", combine, out)


def moe_sparse(x, gate, w1, b1, w2, b2, k, f):
    weights, experts, slot, keep, capacity = route(x, gate, k, f)
    t, e, d = x.shape[0], gate.shape[0], x.shape[1]
    flat = (experts * capacity + slot)[keep]                  # kept choices -> slot row
    token = torch.arange(t).unsqueeze(1).expand(t, k)[keep]
    slots = torch.zeros(e * capacity, d).index_copy(0, flat, x[token])
    out = experts_ffn(slots.view(e, capacity, d), w1, b1, w2, b2).view(e * capacity, d)
    picked = out.index_select(0, flat) * weights[keep].unsqueeze(1)
    return torch.zeros(t, d).index_add(0, token, picked)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("tokens", "dim", "hidden", "experts", "top-k"):
        ap.add_argument("--" + name, type=int, required=True)
    ap.add_argument("--capacity", type=float, default=1.25)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--dispatch", choices=("einsum", "sparse"), required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default="")
    ap.add_argument("--outputs", default="",
                    help="write the layer's output y {T,D} and input gradient {T,D} (float32) here")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    params = load_inputs(a.inputs, a.tokens, a.dim, a.hidden, a.experts)
    layer = moe_einsum if a.dispatch == "einsum" else moe_sparse
    grad = torch.ones(a.tokens, a.dim) / (a.tokens * a.dim)
    times = []
    for r in range(a.repeat + 1):  # the first run warms up
        for p in params:
            p.grad = None
        start = time.perf_counter()
        y = layer(*params, a.top_k, a.capacity)
        y.backward(grad)
        if r > 0:
            times.append(time.perf_counter() - start)
    if a.outputs:  # what strata_bench compares with its own layer's
        with open(a.outputs, "wb") as out:
            out.write(y.detach().numpy().astype(np.float32).tobytes())
            out.write(params[0].grad.numpy().astype(np.float32).tobytes())
    result = {"peer": f"pytorch-{a.dispatch}", "torch_version": torch.__version__,
              "seconds": sorted(times)[len(times) // 2], "runs": times,
              "checksum": float(y.double().sum())}
    text = json.dumps(result)
    if a.json:
        with open(a.json, "w") as out:
            out.write(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
