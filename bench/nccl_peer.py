#!/usr/bin/env python3
"""NCCL all-reduce bus bandwidth through torch.distributed: the peer of the
all-reduce table of `dist_bench` (crates/dist/examples/dist_bench.rs), timed
the same way and the way nccl-tests' all_reduce_perf times it.

One process per GPU (torch.multiprocessing), NCCL backend, the PyTorch
wheel's libnccl (the one `crates/dist/nccl-env.sh` points parprims at).
For each size 2^k bytes of f32: in-place sum all-reduces, 5 to warm up, then
--reps samples of 20 back-to-back operations between two CUDA events on
each rank's stream; a sample's time is the slowest rank's, the figure the
median sample over 20. algbw = bytes / time, busbw = algbw * 2(n - 1)/n.

    python3 bench/nccl_peer.py --gpus 2 --min-log2 20 --max-log2 30 --reps 5 [--out FILE.csv]
"""

import argparse
import os
import statistics

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

OPERATIONS = 20


def worker(rank: int, world: int, args: argparse.Namespace) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank)
    )
    rows = []
    for log2 in range(args.min_log2, args.max_log2 + 1):
        size = 1 << log2
        x = torch.ones(size // 4, dtype=torch.float32, device="cuda")
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        samples = []
        for _ in range(args.reps):
            dist.barrier(device_ids=[rank])
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(OPERATIONS):
                dist.all_reduce(x)
            end.record()
            end.synchronize()
            mine = torch.tensor([start.elapsed_time(end) / OPERATIONS], device="cuda")
            dist.all_reduce(mine, op=dist.ReduceOp.MAX)
            samples.append(mine.item())
        ms = statistics.median(samples)
        algbw = size / (ms * 1e-3) / 1e9
        rows.append((size, ms * 1e3, algbw, algbw * 2 * (world - 1) / world))
    if rank == 0:
        version = ".".join(str(v) for v in torch.cuda.nccl.version())
        print(
            f"all-reduce sum f32, in place, {world} GPUs, torch.distributed {torch.__version__}, "
            f"NCCL {version} ({OPERATIONS} operations per sample, median of {args.reps})"
        )
        print(f"{'bytes':>14} {'time (us)':>12} {'algbw GB/s':>12} {'busbw GB/s':>12}")
        for size, us, algbw, busbw in rows:
            print(f"{size:>14} {us:>12.1f} {algbw:>12.1f} {busbw:>12.1f}")
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write("peer,gpus,bytes,time_us,algbw_gbps,busbw_gbps\n")
                for size, us, algbw, busbw in rows:
                    f.write(f"torch.distributed all_reduce,{world},{size},{us:.2f},{algbw:.2f},{busbw:.2f}\n")
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    parser.add_argument("--min-log2", type=int, default=20)
    parser.add_argument("--max-log2", type=int, default=30)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--port", type=int, default=29517)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.gpus < 2:
        raise SystemExit(f"nccl_peer.py: needs 2 or more GPUs, {args.gpus} visible")
    mp.spawn(worker, args=(args.gpus, args), nprocs=args.gpus, join=True)


if __name__ == "__main__":
    main()
