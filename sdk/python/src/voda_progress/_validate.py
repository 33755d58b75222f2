"""Local checks of a report against the limits in docs/progress.md.

Voda refuses a report with any field out of its limits (400) and keeps
nothing of it, so checking here what is cheap lets the library drop a bad
report with one log line instead of sending it again every interval.
"""

import math
import operator
import re
from typing import Any, Dict, Optional

MAX_BODY_BYTES = 64 * 1024
MAX_METRICS = 16
_METRIC_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]{1,128}")

# Integer fields: (JSON name, lowest, highest).
_INTEGERS = (
    ("workers", 1, None),  # the upper bound is the server's --max-workers
    ("nodes", 0, None),  # at most workers, checked below; 0 means unknown
    ("steps", 0, 10**15),
    ("samples", 0, 10**18),
    ("globalBatchSize", 1, 10**9),
    ("localBatchSize", 1, 10**9),
    ("initBatchSize", 1, 10**9),
    ("maxBatchSize", 1, 10**9),
    ("minLocalBatchSize", 1, 10**9),
    ("maxLocalBatchSize", 1, 10**9),
    ("accumulationSteps", 0, 10**6),
)

# Number fields: (JSON name, lowest, whether the lowest is allowed, highest).
_NUMBERS = (
    ("epoch", 0.0, True, 1e6),
    ("totalEpochs", 0.0, False, 1e6),
    ("stepSeconds", 0.0, False, 86400.0),
    ("gradSqNorm", 0.0, True, 1e30),
    ("gradVariance", 0.0, True, 1e30),
)

# The counters that may not decrease within one generation.
COUNTERS = ("steps", "samples", "epoch")


class InvalidReport(ValueError):
    """A report Voda would refuse; the message names the field."""


def as_int(name: str, value: Any) -> int:
    """Return value as an int, accepting int-like objects such as numpy or
    torch scalars (operator.index) but not bools or floats, which would be a
    silent change of meaning."""
    if isinstance(value, bool):
        raise InvalidReport(f"{name}: want an integer, got a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidReport(f"{name}: want an integer, got {type(value).__name__}") from None


def as_number(name: str, value: Any) -> float:
    """Return value as a finite float; JSON has no NaN or infinity."""
    if isinstance(value, bool):
        raise InvalidReport(f"{name}: want a number, got a bool")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidReport(f"{name}: want a number, got {type(value).__name__}") from None
    if not math.isfinite(number):
        raise InvalidReport(f"{name}: not finite ({number})")
    return number


def build_report(fields: Dict[str, Any]) -> Dict[str, Any]:
    """Return the JSON body for fields (camelCase names, None meaning absent),
    with every value checked and normalised, or raise InvalidReport."""
    body: Dict[str, Any] = {}
    generation = fields.get("generation")
    if not isinstance(generation, str) or not _PRINTABLE_ASCII.fullmatch(generation):
        raise InvalidReport("generation: want 1 to 128 printable ASCII characters")
    body["generation"] = generation
    for name, low, high in _INTEGERS:
        value = fields.get(name)
        if value is None:
            continue
        number = as_int(name, value)
        if number < low or (high is not None and number > high):
            raise InvalidReport(f"{name}: {number} out of range")
        body[name] = number
    for name, low, low_allowed, high in _NUMBERS:
        value = fields.get(name)
        if value is None:
            continue
        number = as_number(name, value)
        if number < low or (number == low and not low_allowed) or number > high:
            raise InvalidReport(f"{name}: {number} out of range")
        body[name] = number
    for name in ("workers", "steps", "epoch"):
        if name not in body:
            raise InvalidReport(f"{name}: required")
    if body.get("nodes", 0) > body["workers"]:
        raise InvalidReport("nodes: more than workers")
    _check_batch(body)
    metrics = fields.get("metrics")
    if metrics is not None:
        body["metrics"] = _check_metrics(metrics)
    if fields.get("final"):
        body["final"] = True
    return body


def _check_batch(body: Dict[str, Any]) -> None:
    """The batch bounds' consistency, as Voda checks it."""
    init, top = body.get("initBatchSize"), body.get("maxBatchSize")
    low, high = body.get("minLocalBatchSize"), body.get("maxLocalBatchSize")
    if init is None and (top is not None or low is not None or high is not None):
        raise InvalidReport("initBatchSize: required with maxBatchSize, minLocalBatchSize or maxLocalBatchSize")
    if top is not None and top < init:
        raise InvalidReport(f"maxBatchSize: {top} is below initBatchSize {init}")
    if low is not None and high is not None and low > high:
        raise InvalidReport(f"minLocalBatchSize: {low} is above maxLocalBatchSize {high}")
    if low is not None and low > max(top or 0, init):
        raise InvalidReport(f"minLocalBatchSize: {low} is above the largest global batch size")
    glob, local, accum = body.get("globalBatchSize"), body.get("localBatchSize"), body.get("accumulationSteps")
    if glob is not None and local is not None:
        if local * body["workers"] > glob:
            raise InvalidReport("localBatchSize: times workers is more than globalBatchSize")
        if accum is not None and local * body["workers"] * (accum + 1) != glob:
            raise InvalidReport("accumulationSteps: localBatchSize x workers x (accumulationSteps + 1) is not globalBatchSize")


def metric_name_ok(name: object) -> bool:
    """Whether name is a metric name Voda accepts."""
    return isinstance(name, str) and _METRIC_NAME.fullmatch(name) is not None


def _check_metrics(metrics: Any) -> Dict[str, float]:
    if not isinstance(metrics, dict):
        raise InvalidReport("metrics: want a dict of names to numbers")
    if len(metrics) > MAX_METRICS:
        raise InvalidReport(f"metrics: more than {MAX_METRICS}")
    checked = {}
    for name, value in metrics.items():
        if not metric_name_ok(name):
            raise InvalidReport(f"metrics: bad name {name!r} (1 to 64 of A-Za-z0-9_.-)")
        checked[name] = as_number(f"metrics.{name}", value)
    return checked


def check_not_decreasing(previous: Optional[Dict[str, Any]], body: Dict[str, Any]) -> None:
    """Raise InvalidReport if a counter of body went down since previous in
    the same generation; Voda refuses that, while a new generation may start
    lower (resumed from a checkpoint)."""
    if previous is None or previous["generation"] != body["generation"]:
        return
    for name in COUNTERS:
        if name in previous and name in body and body[name] < previous[name]:
            raise InvalidReport(
                f"{name}: decreased from {previous[name]} to {body[name]} "
                f"within generation {body['generation']!r}"
            )
