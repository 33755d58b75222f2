"""A small real PyTorch elastic trainer for test/kube's TestRealTrainer.

Run with Debian's /usr/bin/python3 (python3-torch: torch 1.13, CPU) and
PYTHONPATH=<repo>/sdk/python/src. Without --worker it is the launcher, one
torchrun node (a worker pod): it starts --workers processes on this host
through torch's elastic agent (torch.distributed.launcher.api, what torchrun
runs; torchrun's own command line fails on Debian's Python 3.11 build),
c10d rendezvous of --nnodes such launchers (nnodes N:N) at --rdzv-endpoint,
hosted by the one given --rdzv-host, or of one on a free local port. With
--worker it is one of those processes: a 2-layer MLP
on generated data, its gradients all-reduced by DistributedDataParallel over
gloo, reporting to Voda through voda_progress.torch.track (rank 0 sends,
using VODA_PROGRESS_URL, VODA_TOKEN_FILE and what the agent puts in the
environment: WORLD_SIZE, RANK, TORCHELASTIC_RUN_ID, ...). Every process
says whether its reporter sends, with its ranks and the pod it stands for
(TRAINER_POD), and rank 0 writes them all, so the test can check that
global rank 0 alone reports.

Each step trains on a global batch split across the workers, then sleeps
--sleep seconds plus --sleep-per-sample for each sample of its share (what
a GPU would spend on it: on a CPU of few cores, more processes would not
make the real computation any faster), so a step takes a steady time that
shrinks with more workers. After the first step (whose report opens the generation) the
workers sleep --warmup seconds, a start-up cost Voda must not count as
speed. Rank 0 measures its own rate, epochs per second from the end of the
first epoch to the end of the last, and writes it with the epoch ends and
the final counters (to resume from, as from a checkpoint) to --out.
"""

import argparse
import json
import os
import socket
import sys
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--worker", action="store_true", help="run as a training process (set by the launcher)")
    p.add_argument("--workers", type=int, default=1, help="processes to start (nproc_per_node)")
    p.add_argument("--nnodes", type=int, default=1, help="launchers in the rendezvous (torchrun nodes: pods)")
    p.add_argument("--rdzv-endpoint", default="", help="host:port of the rendezvous (default: a free local port)")
    p.add_argument("--rdzv-host", action="store_true", help="this launcher hosts the rendezvous store")
    p.add_argument("--run-id", default="trainer")
    p.add_argument("--out", required=True, help="JSON file rank 0 writes its measurements to")
    p.add_argument("--epochs", type=int, default=6, help="epochs to train in this run")
    p.add_argument("--total-epochs", type=float, default=None, help="epochs of the whole job (reported)")
    p.add_argument("--steps-per-epoch", type=int, default=40)
    p.add_argument("--global-batch", type=int, default=256)
    p.add_argument("--sleep", type=float, default=0.04, help="seconds slept after every step")
    p.add_argument("--sleep-per-sample", type=float, default=0.0,
                   help="seconds slept after every step per sample of the local batch: a GPU's share of the work, which more processes split")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds slept after the first step")
    p.add_argument("--start-epoch", type=int, default=0)
    p.add_argument("--start-steps", type=int, default=0)
    p.add_argument("--start-samples", type=int, default=0)
    return p.parse_args()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args):
    from torch.distributed.elastic.multiprocessing import Std
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    endpoint, configs = args.rdzv_endpoint, {}
    if not endpoint:
        endpoint = "127.0.0.1:%d" % free_port()
    else:
        # Several launchers on one host: say which one serves the store
        # rather than let each try the port.
        configs["is_host"] = args.rdzv_host
    cfg = LaunchConfig(
        min_nodes=args.nnodes,
        max_nodes=args.nnodes,
        nproc_per_node=args.workers,
        run_id=args.run_id,
        rdzv_backend="c10d",
        rdzv_endpoint=endpoint,
        rdzv_configs=configs,
        max_restarts=0,
        monitor_interval=0.5,
        redirects=Std.NONE,
        tee=Std.NONE,
    )
    elastic_launch(cfg, sys.executable)(os.path.abspath(__file__), "--worker", *sys.argv[1:])


def train(args):
    import torch
    import torch.distributed as dist
    from torch import nn

    import voda_progress.torch

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_batch = max(args.global_batch // world, 1)
    step_sleep = args.sleep + args.sleep_per_sample * local_batch

    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    # Generated data: a fixed random linear labelling (the same on every
    # worker) of random inputs; each worker draws its own share of every
    # global batch.
    teacher = torch.randn(128, 10, generator=torch.Generator().manual_seed(1))
    gen = torch.Generator().manual_seed(2 + rank)

    tracker = voda_progress.torch.track(
        optimizer,
        batch_size=local_batch,
        total_epochs=args.total_epochs,
        start_steps=args.start_steps,
        start_samples=args.start_samples,
        start_epoch=args.start_epoch,
    )
    # Who reports: gathered before training, so it costs the measured
    # epochs nothing.
    me = {
        "rank": rank,
        "localRank": int(os.environ.get("LOCAL_RANK", "-1")),
        "groupRank": int(os.environ.get("GROUP_RANK", "-1")),
        "pod": os.environ.get("TRAINER_POD", ""),
        "reports": tracker.reporter.active,
    }
    processes = [None] * world
    dist.all_gather_object(processes, me)
    loss_fn = nn.CrossEntropyLoss()
    epoch_ends = []
    loss = None
    first_step = None  # when the first step, and so the first report, went out
    for epoch in range(args.start_epoch, args.start_epoch + args.epochs):
        for i in range(args.steps_per_epoch):
            x = torch.randn(local_batch, 128, generator=gen)
            y = (x @ teacher).argmax(dim=1)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()  # counted, and reported, by the tracker
            tracker.set_epoch_progress((i + 1) / args.steps_per_epoch)
            time.sleep(step_sleep)
            if first_step is None:
                first_step = time.time()
                time.sleep(args.warmup)
        tracker.set_metrics(loss=loss.item())
        tracker.epoch_end(epoch + 1)
        epoch_ends.append(time.time())

    if rank == 0:
        # Send the exit report now, right after the last epoch's, so no
        # idle time follows the last measured interval.
        tracker.reporter.close()
        steady = epoch_ends[-1] - epoch_ends[0]
        out = {
            "generation": tracker.generation(),
            "workers": world,
            "processes": processes,
            "epochEnds": epoch_ends,
            "steadySeconds": steady,
            "warmupSeconds": epoch_ends[0] - first_step,
            "epochsPerSecond": (len(epoch_ends) - 1) / steady,
            "steps": tracker.steps,
            "samples": tracker.samples,
            "epoch": tracker.epoch,
            "loss": loss.item(),
            "lastReply": tracker.reporter.last_reply,
        }
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f)
        os.replace(tmp, args.out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    a = parse()
    if a.worker:
        train(a)
    else:
        launch(a)
