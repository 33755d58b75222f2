"""A PyTorch training loop whose batch size Voda chooses.

The job declares its batch bounds to Voda (the global batch its learning
rate was tuned for, the largest it accepts, and the most samples one step
holds), reports the batch it runs, its step time and its gradient
statistics, and at the start of every epoch rebuilds its DataLoader with
the batch size Voda's last reply advised for its allocation, scaling the
learning rate by the advised factor. Between replies, and outside Voda
(no VODA_PROGRESS_URL), it trains on its initial batch.

    VODA_PROGRESS_URL=... python3 adaptive_batch.py --epochs 8 --log epochs.jsonl

One process, on the CPU: a 2-layer MLP learning a noisy random labelling
of generated data. A data-parallel job does the same on every worker with
reporter.local_batch_size() samples a micro-step (the reporter is rank 0's;
broadcast its advice to the others).

The gradient statistics are AdaptDL's: every optimizer step runs at least
two micro-batches (the accumulation steps, or the local batch in halves),
so the spread of their gradients estimates the variance of one sample's
gradient; gradVariance is that over initBatchSize (the variance of the
gradient of an initial batch) and gradSqNorm the squared norm of the mean
gradient less its noise, both smoothed over steps.
"""

import argparse
import json
import sys
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--samples", type=int, default=4096, help="samples in the data set (an epoch)")
    p.add_argument("--init-batch", type=int, default=32, help="the global batch the learning rate is tuned for")
    p.add_argument("--max-batch", type=int, default=1024, help="the largest global batch the job accepts")
    p.add_argument("--max-local", type=int, default=256, help="the most samples one micro-step holds")
    p.add_argument("--lr", type=float, default=0.05, help="the learning rate at --init-batch")
    p.add_argument("--log", default=None, help="file to append one JSON line per epoch to (default: stdout)")
    return p.parse_args()


class GradStats:
    """AdaptDL's gradient noise estimate from the micro-batch gradients of
    a step, smoothed by an exponential moving average."""

    def __init__(self, init_batch, smoothing=0.9):
        self.init_batch = init_batch
        self.smoothing = smoothing
        self.sqr = None
        self.var = None

    def update(self, grads, chunk):
        """grads: one flat gradient per micro-batch of chunk samples."""
        import torch

        m = len(grads)
        mean = torch.stack(grads).mean(dim=0)
        spread = sum(float((g - mean).pow(2).sum()) for g in grads) / (m - 1)
        per_sample = spread * chunk  # the variance of one sample's gradient
        sqr = max(float(mean.pow(2).sum()) - per_sample / (chunk * m), 0.0)
        var = per_sample / self.init_batch
        if self.sqr is None:
            self.sqr, self.var = sqr, var
        else:
            a = self.smoothing
            self.sqr, self.var = a * self.sqr + (1 - a) * sqr, a * self.var + (1 - a) * var


def main():
    args = parse()
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    import voda_progress.torch
    from voda_progress import default_reporter

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(args.samples, 64)
    teacher = torch.randn(64, 10)
    y = (x @ teacher + 2.0 * torch.randn(args.samples, 10)).argmax(dim=1)  # noisy labels: noisy gradients
    data = TensorDataset(x, y)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    reporter = default_reporter()
    local, accum = min(args.init_batch, args.max_local), 0
    while local * (accum + 1) < args.init_batch:
        accum += 1
    tracker = voda_progress.torch.track(
        optimizer,
        reporter=reporter,
        batch_size=local,
        accumulation_steps=accum,
        total_epochs=args.epochs,
        init_batch_size=args.init_batch,
        max_batch_size=args.max_batch,
        max_local_batch_size=args.max_local,
    )
    stats = GradStats(args.init_batch)
    out = open(args.log, "a") if args.log else sys.stdout
    for epoch in range(args.epochs):
        # The batch for this epoch: Voda's advice for the allocation, else
        # the initial batch. The learning rate follows it.
        advice = reporter.batch_advice
        if advice is not None:
            local, accum = advice["localSize"], advice["accumulationSteps"]
        scale = reporter.lr_scale()
        for group in optimizer.param_groups:
            group["lr"] = args.lr * scale
        tracker.set_batch(local, accumulation_steps=accum)
        loader = DataLoader(data, batch_size=local * (accum + 1), shuffle=True, drop_last=True)
        started, loss = time.monotonic(), None
        for i, (xb, yb) in enumerate(loader):
            # accum + 1 micro-steps of local samples (two halves when there
            # is no accumulation, to measure the gradient's noise).
            chunks = max(accum + 1, 2)
            grads = []
            optimizer.zero_grad()
            for xc, yc in zip(xb.chunk(chunks), yb.chunk(chunks)):
                model.zero_grad()
                loss = loss_fn(model(xc), yc)
                loss.backward()
                grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
            mean = torch.stack(grads).mean(dim=0)
            offset = 0
            for p in model.parameters():
                p.grad.copy_(mean[offset : offset + p.numel()].view_as(p))
                offset += p.numel()
            stats.update(grads, xb.shape[0] // chunks)
            tracker.set_grad_stats(stats.sqr, stats.var)  # sent with the step's report
            optimizer.step()
            tracker.set_epoch_progress((i + 1) / len(loader))
        tracker.set_metrics(loss=float(loss))
        tracker.epoch_end(epoch + 1)
        line = {
            "epoch": epoch,
            "batch": local * (accum + 1),
            "localBatch": local,
            "accumulationSteps": accum,
            "lr": args.lr * scale,
            "advice": advice,
            "adviceAtEnd": reporter.batch_advice,
            "seconds": round(time.monotonic() - started, 3),
            "loss": float(loss),
        }
        print(json.dumps(line), file=out, flush=True)
    reporter.close()


if __name__ == "__main__":
    main()
