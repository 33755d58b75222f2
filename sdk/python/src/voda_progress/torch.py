"""PyTorch (and PyTorch elastic / torchrun) helper.

    tracker = voda_progress.torch.track(optimizer, batch_size=32, total_epochs=90)
    for epoch in range(start, 90):
        for i, batch in enumerate(loader):
            ...; optimizer.step()          # counted
            tracker.set_epoch_progress(i / len(loader))
        tracker.epoch_end(epoch + 1)

torch itself is never imported: the helper reads what torchrun puts in the
environment (WORLD_SIZE, RANK, LOCAL_WORLD_SIZE, TORCHELASTIC_RUN_ID,
TORCHELASTIC_RESTART_COUNT) and wraps optimizer.step, which works on any
torch version including 1.13, which has no optimizer step hooks.
"""

import os
import types
from typing import Any, Optional

from ._tracker import Tracker, generation_part, process_id
from .reporter import env_int


class TorchTracker(Tracker):
    """The progress of one torchrun worker group. torchrun restarts every
    worker when the group changes size or a worker fails, so what the
    environment says at start-up holds for this process's whole life."""

    def __init__(self, **kwargs: Any) -> None:
        world = env_int("WORLD_SIZE")
        local = env_int("LOCAL_WORLD_SIZE")
        self._world = world if world and world > 0 else 1
        self._nodes = world // local if world and local and local > 0 else None
        run_id = os.environ.get("TORCHELASTIC_RUN_ID")
        run_id = generation_part(run_id) if run_id else process_id()
        restart = env_int("TORCHELASTIC_RESTART_COUNT") or 0
        self._generation = f"{run_id}-{restart}-{self._world}"
        super().__init__(**kwargs)

    def generation(self) -> str:
        return self._generation

    def workers(self) -> int:
        return self._world

    def nodes(self) -> Optional[int]:
        return self._nodes


def track(optimizer: Any, **kwargs: Any) -> TorchTracker:
    """Count every optimizer.step() of optimizer as one step and report.

    The keywords are Tracker's: batch_size, total_epochs, reporter,
    start_steps, start_samples, start_epoch, and for a batch size Voda
    chooses accumulation_steps, init_batch_size, max_batch_size,
    min_local_batch_size and max_local_batch_size. batch_size is the local (per worker) batch size; with it the reports
    carry samples and the global batch size (local x WORLD_SIZE). The
    start_* arguments continue the counters from a checkpoint. reporter
    defaults to the process's shared one (rank from RANK; inactive outside
    Voda). Returns the tracker: call epoch_end(epochs_done) after each epoch
    and, if you like, set_epoch_progress(fraction) and set_metrics().
    """
    tracker = TorchTracker(**kwargs)
    original = optimizer.step

    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        tracker.step()
        return result

    # A bound method, not a plain function: torch's LR schedulers wrap
    # optimizer.step and need its __self__ and __func__.
    optimizer.step = types.MethodType(step, optimizer)
    return tracker
