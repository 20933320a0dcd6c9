#!/usr/bin/python3
"""PyTorch DDP peer for `strata_bench train`: one rank of data-parallel
training (DistributedDataParallel, gloo, CPU) of a Strata job config's model
on the same data, per-worker batch, optimizer and threads. The benchmark
tool starts every rank, each on its own emulated host when it emulates a
network; rank 0 reports training images per second (all ranks) as JSON.

Run with Debian's interpreter (/usr/bin/python3, python3-torch 1.13):

    /usr/bin/python3 torch_ddp.py --config configs/fashion_mnist_fcheavy.json \
        --rank 0 --world-size 4 --master 198.18.0.1:29500 --batch-size 256 \
        --steps 20 --threads 1 --json out.json
"""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import load_train_data, make_optimizer, reference_model  # noqa: E402

WARMUP_STEPS = 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--master", required=True, help="HOST:PORT of rank 0")
    ap.add_argument("--batch-size", type=int, default=0, help="global batch (all ranks)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    if args.world_size < 1 or not 0 <= args.rank < args.world_size:
        raise SystemExit(f"torch_ddp.py: rank {args.rank} of world size {args.world_size}")

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)  # every rank starts from the same weights, as DDP expects
    with open(args.config) as f:
        cfg = json.load(f)
    batch = args.batch_size or cfg.get("training", {}).get("batch_size", 64)
    if batch % args.world_size:
        raise SystemExit(f"torch_ddp.py: batch {batch} does not split over {args.world_size} ranks")
    per_rank = batch // args.world_size
    total_steps = args.steps + WARMUP_STEPS

    dist.init_process_group("gloo", init_method=f"tcp://{args.master}", rank=args.rank,
                            world_size=args.world_size, timeout=datetime.timedelta(minutes=10))
    model_cfg = cfg["model"]
    x, y = load_train_data(cfg["data"], model_cfg["input"], model_cfg["classes"],
                           max(batch * total_steps, 1024))
    x, y = x[args.rank::args.world_size], y[args.rank::args.world_size]  # this rank's shard
    model = DistributedDataParallel(reference_model(cfg)[0])
    opt = make_optimizer(cfg, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    steps_per_epoch = x.shape[0] // per_rank

    def step(i):
        j = i % steps_per_epoch
        xb, yb = x[j * per_rank:(j + 1) * per_rank], y[j * per_rank:(j + 1) * per_rank]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()  # DDP all-reduces the gradients, bucket by bucket
        opt.step()
        return loss

    for i in range(WARMUP_STEPS):
        step(i)
    dist.barrier()
    start = time.perf_counter()
    for i in range(WARMUP_STEPS, total_steps):
        loss = step(i)
    dist.barrier()
    seconds = time.perf_counter() - start
    if args.rank == 0:
        result = {"peer": "pytorch-ddp", "torch_version": torch.__version__,
                  "world_size": args.world_size, "steps": args.steps, "batch_size": batch,
                  "threads": args.threads, "train_seconds": seconds,
                  "images_per_sec": args.steps * batch / seconds, "final_loss": float(loss)}
        text = json.dumps(result)
        if args.json:
            with open(args.json, "w") as f:
                f.write(text + "\n")
        print(text)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
