"""PyTorch's own all-reduce over Gloo (torch.distributed, the same LibTorch
1.13 and Gloo as paradnn's communicator), 2 processes on this host, for the
gradient sizes of bench/data_parallel.sh's models: the time paradnn's
all-reduce per step should be compared with. Prints one line per size:
elements, MB, median ms of 10 all-reduces (after 2 untimed).
  /usr/bin/python3 bench/gloo_allreduce.py ELEMENTS...
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, sizes, port, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    for n in sizes:
        t = torch.ones(n)
        for _ in range(2):
            dist.all_reduce(t)
        times = []
        for _ in range(10):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t)
            t.div_(2)
            times.append(time.perf_counter() - start)
        if rank == 0:
            out.put((n, statistics.median(times) * 1e3))
    dist.destroy_process_group()


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = 25000 + os.getpid() % 5000
    procs = [ctx.Process(target=rank_main, args=(r, sizes, port, queue))
             for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print(f"{'elements':>12} {'MB':>8} {'ms':>9}")
    while not queue.empty():
        n, ms = queue.get()
        print(f"{n:>12} {n * 4 / 1e6:>8.2f} {ms:>9.3f}")
