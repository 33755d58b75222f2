"""What the framework helpers share: counting steps, samples and epochs,
timing steps, and turning that into Reporter.report() calls."""

import math
import re
import secrets
import time
from typing import Dict, Mapping, Optional

from .reporter import Reporter, default_reporter

_NOT_PRINTABLE = re.compile(r"[^\x20-\x7e]")


def generation_part(text: str, limit: int = 100) -> str:
    """text made safe for a generation string (printable ASCII, at most
    limit characters), since a user-chosen run id can hold anything."""
    return _NOT_PRINTABLE.sub("_", text)[:limit] or "_"


def process_id() -> str:
    """A random id of this process, for generations where the framework
    gives no run id: a new process must never reuse an old generation,
    because its counters may start lower than the old one's."""
    return "p" + secrets.token_hex(4)


class Tracker:
    """Counts a job's progress and reports it after every step.

    Subclasses say who the job is now: generation(), workers() and nodes().
    The counters are public so they can be saved with a checkpoint and
    restored (start_steps, start_samples, start_epoch or set_counters()).

    batch_size is the local (per worker, per micro-step) batch size and
    accumulation_steps the extra micro-steps per optimizer step; a job whose
    batch may change declares init_batch_size, max_batch_size and
    optionally min_local_batch_size and max_local_batch_size (global sizes
    but for the local ones), and calls set_batch() when it changes its
    batch, e.g. to what reporter.batch_size() advises.
    """

    def __init__(
        self,
        *,
        batch_size: Optional[int] = None,
        total_epochs: Optional[float] = None,
        reporter: Optional[Reporter] = None,
        start_steps: int = 0,
        start_samples: int = 0,
        start_epoch: float = 0.0,
        accumulation_steps: int = 0,
        init_batch_size: Optional[int] = None,
        max_batch_size: Optional[int] = None,
        min_local_batch_size: Optional[int] = None,
        max_local_batch_size: Optional[int] = None,
    ) -> None:
        self.reporter = reporter if reporter is not None else default_reporter()
        self.batch_size = batch_size
        self.accumulation_steps = accumulation_steps
        self.init_batch_size = init_batch_size
        self.max_batch_size = max_batch_size
        self.min_local_batch_size = min_local_batch_size
        self.max_local_batch_size = max_local_batch_size
        self.grad_sq_norm: Optional[float] = None
        self.grad_variance: Optional[float] = None
        self.total_epochs = total_epochs
        self.metrics: Optional[Dict[str, float]] = None
        self.set_counters(steps=start_steps, samples=start_samples, epoch=start_epoch)

    def generation(self) -> str:
        raise NotImplementedError

    def workers(self) -> int:
        raise NotImplementedError

    def nodes(self) -> Optional[int]:
        return None

    def set_counters(
        self,
        *,
        steps: Optional[int] = None,
        samples: Optional[int] = None,
        epoch: Optional[float] = None,
    ) -> None:
        """Set the cumulative counters, e.g. to what a checkpoint or a
        restored elastic state holds. Lower values than before are fine only
        in a new generation (after a restart or reset)."""
        if steps is not None:
            self.steps = steps
        if samples is not None:
            self.samples = samples
        if epoch is not None:
            self.epoch = float(epoch)
            self._epochs_done = float(epoch)
        self._restart_timing()

    def set_batch(self, batch_size: int, accumulation_steps: int = 0) -> None:
        """The local batch size and accumulation steps the job runs from
        now on (reported with the next report; the step time measured so
        far is dropped, since it was another batch's)."""
        self.batch_size = batch_size
        self.accumulation_steps = accumulation_steps
        self._restart_timing()

    def set_grad_stats(self, sq_norm: Optional[float], variance: Optional[float]) -> None:
        """The gradient statistics sent with the next reports, as AdaptDL
        measures them: the squared norm of the true gradient and the
        variance of the gradient of init_batch_size samples (one sample's
        variance over init_batch_size), whatever batch the job runs. Voda
        uses them to weigh a larger batch's statistical efficiency."""
        self.grad_sq_norm, self.grad_variance = sq_norm, variance

    def global_batch_size(self) -> Optional[int]:
        """The samples of one optimizer step over all workers now, None
        without a batch size."""
        if self.batch_size is None:
            return None
        return self.batch_size * self.workers() * (self.accumulation_steps + 1)

    def set_metrics(self, metrics: Optional[Mapping[str, float]] = None, **named: float) -> None:
        """Metrics sent with the next reports (at most 16 numbers by name),
        e.g. set_metrics(loss=0.41)."""
        merged = dict(metrics or {}, **named)
        self.metrics = merged or None

    def step(self, count: int = 1) -> None:
        """Count count optimizer steps (one by default) and report."""
        now = time.monotonic()
        self.steps += count
        if self.batch_size is not None:
            self.samples += self.global_batch_size() * count
        self._time_steps(now, count)
        self.report()

    def set_epoch_progress(self, fraction: float) -> None:
        """How far into the current epoch training is (0 to 1), so that the
        reported epoch is fractional between epoch_end() calls. Never moves
        the epoch backwards."""
        self.epoch = max(self.epoch, math.floor(self._epochs_done) + float(fraction))

    def epoch_end(self, epoch: Optional[float] = None) -> None:
        """An epoch ended; epoch is the number of epochs done so far (the
        next whole number if omitted). Reports at once."""
        if epoch is None:
            epoch = math.floor(self._epochs_done) + 1
        self.epoch = max(self.epoch, float(epoch))
        self._epochs_done = self.epoch
        self.report()
        self.reporter.epoch_end()
        # Evaluation and checkpointing happen between epochs; keep them out
        # of the next window's mean step time.
        self._last_step_time = None

    def report(self) -> None:
        """Hand the current state to the reporter (it decides when to send)."""
        if not self.reporter.active:
            return
        workers = self.workers()
        batched = self.batch_size is not None
        self.reporter.report(
            generation=self.generation(),
            workers=workers,
            nodes=self.nodes(),
            steps=self.steps,
            samples=self.samples if batched else None,
            epoch=self.epoch,
            total_epochs=self.total_epochs,
            global_batch_size=self.global_batch_size(),
            local_batch_size=self.batch_size,
            accumulation_steps=self.accumulation_steps if batched else None,
            step_seconds=self._step_seconds,
            grad_sq_norm=self.grad_sq_norm,
            grad_variance=self.grad_variance,
            metrics=self.metrics,
            init_batch_size=self.init_batch_size,
            max_batch_size=self.max_batch_size,
            min_local_batch_size=self.min_local_batch_size,
            max_local_batch_size=self.max_local_batch_size,
        )

    def _restart_timing(self) -> None:
        self._step_seconds: Optional[float] = None
        self._last_step_time: Optional[float] = None
        self._window_time: Optional[float] = None
        self._window_steps = self.steps
        self._window_sends = -1

    def _time_steps(self, now: float, count: int) -> None:
        """Keep stepSeconds the mean time of a step since the last report
        went out: a new window starts whenever the reporter has sent."""
        sends = self.reporter.sends
        if self._window_time is None or sends != self._window_sends:
            start = self._last_step_time
            self._window_time = start if start is not None else now
            self._window_steps = self.steps - count if start is not None else self.steps
            self._window_sends = sends
        if self.steps > self._window_steps and now > self._window_time:
            self._step_seconds = (now - self._window_time) / (self.steps - self._window_steps)
        self._last_step_time = now
