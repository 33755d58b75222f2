"""Horovod elastic helper.

    import horovod.torch as hvd
    hvd.init()
    tracker = voda_progress.horovod.HorovodTracker(hvd=hvd, batch_size=32)
    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    state.register_reset_callbacks([tracker.on_reset])
    ... in the loop: optimizer.step(); tracker.step()
    ... after an epoch: tracker.epoch_end(epoch + 1)

Horovod elastic changes the worker set in place: processes survive a
reset, hvd.size() changes, and rank 0 may move to another process. So the
generation counts resets, and every reset re-reads the size and the rank.
horovod is imported only when no hvd module is passed.
"""

import sys
from typing import Any, Optional

from ._tracker import Tracker, process_id
from .reporter import Reporter

# Horovod's framework modules, in the order the helper looks for them.
_HOROVOD_MODULES = ("horovod.torch", "horovod.tensorflow.keras", "horovod.tensorflow", "horovod.keras")


def _import_horovod() -> Any:
    """The horovod module the program already uses, else horovod.torch or
    horovod.tensorflow, whichever imports."""
    for name in _HOROVOD_MODULES:
        if name in sys.modules:
            return sys.modules[name]
    import importlib

    for name in _HOROVOD_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("voda_progress.horovod needs horovod (or pass hvd=)")


class HorovodTracker(Tracker):
    """The progress of a Horovod (elastic) job, seen from one process.

    Call after hvd.init(). hvd is the horovod module in use (found if
    omitted); the other keywords are Tracker's: batch_size (local),
    total_epochs, reporter, start_steps, start_samples, start_epoch. The
    reporter defaults to one from the environment with rank hvd.rank().
    The generation is "<process id>-<resets>-<size>":
    the process id keeps a new rank 0 (another process, whose counters may
    differ) from reusing the generation of the old one.
    """

    def __init__(self, *, hvd: Any = None, reporter: Optional[Reporter] = None, **kwargs: Any) -> None:
        self._hvd = hvd if hvd is not None else _import_horovod()
        self._process = process_id()
        self.resets = 0
        if reporter is None:
            # Not the shared default reporter: Horovod does not set RANK,
            # hvd.rank() is the truth and it changes at resets.
            reporter = Reporter.from_env(rank=self._hvd.rank())
        super().__init__(reporter=reporter, **kwargs)
        self._read_world()

    def on_reset(self) -> None:
        """Register with state.register_reset_callbacks([tracker.on_reset]):
        a reset is a new generation with a new size and maybe a new rank 0.
        Restore counters with set_counters() if the state rolled back."""
        self.resets += 1
        self._read_world()
        self._restart_timing()

    def generation(self) -> str:
        return f"{self._process}-{self.resets}-{self._size}"

    def workers(self) -> int:
        return self._size

    def nodes(self) -> Optional[int]:
        return self._nodes

    def _read_world(self) -> None:
        hvd = self._hvd
        self._size = max(int(hvd.size()), 1)
        self.reporter.set_rank(int(hvd.rank()))
        # On rank 0 (the only one that reports), local rank is 0 and
        # cross_size() counts the processes with local rank 0: one a host.
        try:
            nodes = int(hvd.cross_size())
        except (AttributeError, TypeError, ValueError, RuntimeError):
            nodes = 0
        self._nodes = nodes if 0 < nodes <= self._size else None
