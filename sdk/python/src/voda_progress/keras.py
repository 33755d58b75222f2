"""A Keras callback that reports progress, for Horovod elastic Keras jobs
(or any Keras fit() with a tracker of your own).

    callback = voda_progress.keras.ProgressCallback(hvd=hvd, batch_size=32)
    state.register_reset_callbacks([callback.tracker.on_reset])
    model.fit(..., callbacks=[callback, ...])

It subclasses tf.keras.callbacks.Callback when tensorflow is importable;
otherwise it is a plain class with the same methods, so the library can be
imported and tested without TensorFlow.
"""

from typing import Any, Dict, Mapping, Optional

from ._tracker import Tracker
from ._validate import MAX_METRICS, InvalidReport, as_number, metric_name_ok

try:
    import tensorflow as tf

    _Base: Any = tf.keras.callbacks.Callback
except ImportError:
    _Base = object


def _numeric(logs: Optional[Mapping[str, Any]]) -> Dict[str, float]:
    """The entries of Keras logs Voda accepts as metrics: finite numbers
    with valid names, at most 16."""
    metrics: Dict[str, float] = {}
    for name, value in (logs or {}).items():
        if len(metrics) == MAX_METRICS:
            break
        try:
            number = as_number(name, value)
        except InvalidReport:
            continue
        if metric_name_ok(name):
            metrics[name] = number
    return metrics


class ProgressCallback(_Base):  # type: ignore[misc, valid-type]
    """Counts a step at every training batch and reports each epoch's end
    with the epoch's logs as metrics. tracker defaults to a HorovodTracker
    made with tracker_kwargs (hvd=, batch_size=, total_epochs=, ...)."""

    def __init__(self, tracker: Optional[Tracker] = None, **tracker_kwargs: Any) -> None:
        super().__init__()
        if tracker is None:
            from .horovod import HorovodTracker

            tracker = HorovodTracker(**tracker_kwargs)
        self.tracker = tracker

    def on_train_batch_end(self, batch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
        self.tracker.step()
        # Keras puts the steps per epoch in params when it knows them.
        steps = (getattr(self, "params", None) or {}).get("steps")
        if steps:
            self.tracker.set_epoch_progress(min((batch + 1) / steps, 1.0))

    def on_epoch_end(self, epoch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
        metrics = _numeric(logs)
        if metrics:
            self.tracker.set_metrics(metrics)
        # Keras counts epochs from 0; the report wants epochs done.
        self.tracker.epoch_end(epoch + 1)

