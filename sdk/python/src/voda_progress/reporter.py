"""The core of the library: a Reporter sends a training job's latest
progress to Voda from a background thread (see docs/progress.md).

Design, and why:

- Counters are cumulative, so only the latest state matters. report() just
  replaces the pending state (coalescing); nothing is ever queued, and a
  lost report costs nothing because the next one carries everything.
- The training loop must never wait for or fail on Voda. report(),
  epoch_end() and close() only take a lock for a moment; the network is
  used by one daemon thread, with short timeouts, and every failure there
  is logged (at most once a minute) and otherwise ignored.
- Only rank 0 sends: other ranks and processes outside Voda (no
  VODA_PROGRESS_URL) get an inactive reporter whose methods do nothing, so
  the same training script runs anywhere.
- A 429 or 503 with Retry-After (Voda applying the job's other reports, or
  another replica winning the write) is tried again after that delay, a
  little more so that racing reporters spread out, and nothing is sent
  before it, not even at an epoch's end.
"""

import atexit
import json
import logging
import math
import os
import random
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Optional

from ._validate import MAX_BODY_BYTES, InvalidReport, build_report, check_not_decreasing

logger = logging.getLogger("voda_progress")

DEFAULT_INTERVAL = 30.0
MIN_INTERVAL = 5.0
MAX_INTERVAL = 600.0
TIMEOUT = 5.0
CLOSE_TIMEOUT = 2.0
_LOG_EVERY = 60.0
_MAX_REPLY_BYTES = 1 << 20
# Answers that mean "busy, come back after Retry-After".
_RETRY_STATUSES = (429, 503)


class _RateLimitedLog:
    """Logs a warning at most once a minute, so that a Voda that is down
    for an hour costs the job's log sixty lines rather than thousands."""

    def __init__(self) -> None:
        self._last = -math.inf
        self._suppressed = 0
        self._lock = threading.Lock()

    def warning(self, message: str, *args: Any) -> None:
        with self._lock:
            now = time.monotonic()
            if now - self._last < _LOG_EVERY:
                self._suppressed += 1
                return
            suppressed, self._suppressed, self._last = self._suppressed, 0, now
        if suppressed:
            message += " (%d similar messages suppressed in the last minute)"
            args = args + (suppressed,)
        logger.warning(message, *args)


def _env_float(name: str) -> Optional[float]:
    """The float in environment variable name, or None if unset or bad."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        logger.warning("voda_progress: ignoring %s=%r (not a number)", name, raw)
        return None
    return value if math.isfinite(value) else None


def env_int(name: str) -> Optional[int]:
    """The integer in environment variable name, or None if unset or bad."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        logger.warning("voda_progress: ignoring %s=%r (not an integer)", name, raw)
        return None


class Reporter:
    """Sends progress reports for one job to Voda.

    url is the job's report route (VODA_PROGRESS_URL); None makes an inactive
    reporter that does nothing. token_file is re-read at every send because
    the kubelet rotates the projected token. interval is the initial time
    between sends in seconds (the reply's reportIntervalSeconds replaces it),
    bounded to [5, 600].

    _min_interval lowers the bound of 5 s; it exists for tests only, which
    need intervals of a few hundredths of a second. Real jobs should not set
    it: Voda asks for its own interval in every reply.
    """

    def __init__(
        self,
        url: Optional[str],
        *,
        token_file: Optional[str] = None,
        interval: float = DEFAULT_INTERVAL,
        rank: int = 0,
        timeout: float = TIMEOUT,
        close_timeout: float = CLOSE_TIMEOUT,
        _min_interval: float = MIN_INTERVAL,
    ) -> None:
        self._url = url or None
        self._token_file = token_file or None
        self._min_interval = _min_interval
        self._interval = self._bounded(interval)
        self._rank = rank
        self._timeout = timeout
        self._close_timeout = close_timeout
        self._log = _RateLimitedLog()

        self._cond = threading.Condition()
        self._pending: Optional[Dict[str, Any]] = None  # accepted, not yet sent
        self._latest: Optional[Dict[str, Any]] = None  # last accepted report
        self._urgent = False  # epoch_end(): send without waiting for the interval
        self._next_send = -math.inf  # monotonic time before which no routine send
        self._not_before = -math.inf  # monotonic time before which no send at all (Retry-After)
        self._closed = False
        self._thread: Optional[threading.Thread] = None
        self._last_reply: Optional[Dict[str, Any]] = None
        self._advice: Optional[Dict[str, Any]] = None
        self._sends = 0

    @classmethod
    def from_env(
        cls,
        *,
        rank: Optional[int] = None,
        interval: Optional[float] = None,
        **kwargs: Any,
    ) -> "Reporter":
        """A reporter configured from what Voda injects into the pods:
        VODA_PROGRESS_URL and VODA_TOKEN_FILE, with VODA_REPORT_INTERVAL as
        the initial interval. rank defaults to the RANK variable (set by
        torchrun) or 0; a rank other than 0 gets an inactive reporter."""
        if rank is None:
            rank = env_int("RANK") or 0
        if interval is None:
            interval = _env_float("VODA_REPORT_INTERVAL") or DEFAULT_INTERVAL
        return cls(
            os.environ.get("VODA_PROGRESS_URL"),
            token_file=os.environ.get("VODA_TOKEN_FILE"),
            interval=interval,
            rank=rank,
            **kwargs,
        )

    # --- what the training loop calls -------------------------------------

    @property
    def active(self) -> bool:
        """Whether this reporter sends anything: inside Voda, on rank 0, not
        closed."""
        return self._url is not None and self._rank == 0 and not self._closed

    def set_rank(self, rank: int) -> None:
        """Change the rank, for frameworks where rank 0 can move to another
        process (Horovod elastic after a reset). A reporter that is no longer
        rank 0 forgets its unsent report and goes quiet."""
        with self._cond:
            self._rank = rank
            if rank != 0:
                self._pending = None
                self._latest = None
                self._urgent = False

    def report(
        self,
        *,
        generation: str,
        workers: int,
        steps: int,
        epoch: float,
        nodes: Optional[int] = None,
        samples: Optional[int] = None,
        total_epochs: Optional[float] = None,
        global_batch_size: Optional[int] = None,
        local_batch_size: Optional[int] = None,
        step_seconds: Optional[float] = None,
        grad_sq_norm: Optional[float] = None,
        grad_variance: Optional[float] = None,
        metrics: Optional[Dict[str, float]] = None,
        init_batch_size: Optional[int] = None,
        max_batch_size: Optional[int] = None,
        min_local_batch_size: Optional[int] = None,
        max_local_batch_size: Optional[int] = None,
        accumulation_steps: Optional[int] = None,
    ) -> None:
        """Record the job's latest cumulative state; it is sent within one
        interval. Cheap enough to call at every step. A state Voda would
        refuse (a NaN, a counter that went down, a bad metric name) is
        dropped with a log line; the previous one stays pending.

        A job whose batch size may change declares its bounds:
        init_batch_size (the global batch its learning rate was tuned for),
        max_batch_size (the largest global batch it accepts) and
        max_local_batch_size (the most samples one worker's step holds), and
        reports the batch it runs (global_batch_size, local_batch_size,
        accumulation_steps); Voda's replies then advise a batch size, read
        with batch_size() and friends. grad_sq_norm and grad_variance are
        AdaptDL's grad_sqr and grad_var: the variance is that of the
        gradient of init_batch_size samples (one sample's variance over
        init_batch_size)."""
        if not self.active:
            return
        fields = {
            "generation": generation,
            "workers": workers,
            "nodes": nodes,
            "steps": steps,
            "samples": samples,
            "epoch": epoch,
            "totalEpochs": total_epochs,
            "globalBatchSize": global_batch_size,
            "localBatchSize": local_batch_size,
            "stepSeconds": step_seconds,
            "gradSqNorm": grad_sq_norm,
            "gradVariance": grad_variance,
            "metrics": metrics,
            "initBatchSize": init_batch_size,
            "maxBatchSize": max_batch_size,
            "minLocalBatchSize": min_local_batch_size,
            "maxLocalBatchSize": max_local_batch_size,
            "accumulationSteps": accumulation_steps,
        }
        try:
            body = build_report(fields)
        except InvalidReport as err:
            self._log.warning("voda_progress: report dropped: %s", err)
            return
        with self._cond:
            try:
                check_not_decreasing(self._latest, body)
            except InvalidReport as err:
                self._log.warning("voda_progress: report dropped: %s", err)
                return
            if not self.active:  # closed or demoted while we checked
                return
            self._latest = body
            self._pending = body
            self._start_thread()
            self._cond.notify()

    def epoch_end(self) -> None:
        """Send the latest report now rather than at the end of the
        interval: an epoch's end is when a job's progress is most exact."""
        with self._cond:
            if self.active and self._pending is not None:
                self._urgent = True
                self._cond.notify()

    def close(self) -> None:
        """Send the latest report with final: true and stop. Waits at most
        close_timeout seconds (2 s), so a Voda that is down cannot hold up
        the job's exit. Registered with atexit; calling it twice is fine."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._cond.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._close_timeout)

    @property
    def last_reply(self) -> Optional[Dict[str, Any]]:
        """The parsed reply of the last successful send (for instance
        last_reply["allocation"]["workers"]), or None before the first."""
        return self._last_reply

    # --- the batch size Voda advises ----------------------------------------

    @property
    def batch_advice(self) -> Optional[Dict[str, Any]]:
        """The last reply's batch advice, {"size", "localSize",
        "accumulationSteps", "lrScale"}, or None: before the first reply
        with one, for a job that declared no adaptive bounds, or when the
        last reply had none."""
        return self._advice

    def batch_size(self, default: Optional[int] = None) -> Optional[int]:
        """The global batch size Voda advises for the job's allocation now,
        else default (the job's own)."""
        advice = self._advice
        return advice["size"] if advice is not None else default

    def local_batch_size(self, default: Optional[int] = None) -> Optional[int]:
        """The samples per worker per micro-step that go with batch_size(),
        else default."""
        advice = self._advice
        return advice["localSize"] if advice is not None else default

    def accumulation_steps(self, default: int = 0) -> int:
        """The extra gradient-accumulation micro-steps per optimizer step
        that go with batch_size(), else default."""
        advice = self._advice
        return advice["accumulationSteps"] if advice is not None else default

    def lr_scale(self) -> float:
        """The factor by which to multiply the learning rate tuned for the
        initial batch size when running batch_size() (AdaScale's gain), 1.0
        without advice."""
        advice = self._advice
        return advice["lrScale"] if advice is not None else 1.0

    @property
    def interval(self) -> float:
        """The current time between routine sends, in seconds."""
        return self._interval

    @property
    def sends(self) -> int:
        """How many requests the reporter has started; helpers use it to
        know when a report went out and a new measuring window begins."""
        return self._sends

    # --- the sending thread ------------------------------------------------

    def _bounded(self, seconds: float) -> float:
        return min(max(float(seconds), self._min_interval), MAX_INTERVAL)

    def _start_thread(self) -> None:
        """Start the sender on the first report (called with the lock held),
        so inactive and idle reporters never own a thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="voda-progress", daemon=True)
            self._thread.start()
            atexit.register(self.close)

    def _next_body(self):
        """Wait until a report is due; return it and whether it is the final
        one. Called with the lock held."""
        while True:
            if self._closed:
                if self._latest is None:
                    return None, True
                return dict(self._latest, final=True), True
            if self._pending is not None:
                due = self._not_before if self._urgent else max(self._next_send, self._not_before)
                wait = due - time.monotonic()
                if wait <= 0:
                    body, self._pending, self._urgent = self._pending, None, False
                    return body, False
                self._cond.wait(wait)
            else:
                self._cond.wait()

    def _run(self) -> None:
        while True:
            with self._cond:
                body, final = self._next_body()
                if body is not None:
                    self._sends += 1
                closed_at = time.monotonic()
            if body is None:
                return
            if final:
                self._send_final(body, closed_at + self._close_timeout)
                return
            started = time.monotonic()
            delivered, retry_after = self._try_send(body)
            with self._cond:
                self._next_send = started + self._interval
                if retry_after is not None:
                    self._not_before = time.monotonic() + retry_after
                    self._next_send = self._not_before
                if not delivered and self._pending is None and self._latest is body:
                    self._pending = body  # try again: at the next interval, or after Retry-After

    def _send_final(self, body: Dict[str, Any], deadline: float) -> None:
        """Send the final report, again after a busy answer's Retry-After
        while that still ends before deadline (close() waits no longer)."""
        while True:
            wait = self._not_before - time.monotonic()
            if wait > 0:
                if time.monotonic() + wait >= deadline:
                    return
                time.sleep(wait)
            delivered, retry_after = self._try_send(body)
            if delivered or retry_after is None:
                return
            self._not_before = time.monotonic() + retry_after

    def _try_send(self, body: Dict[str, Any]):
        """_send that never raises: (delivered, retry_after or None)."""
        try:
            return self._send(body)
        except Exception as err:  # the thread must outlive any surprise
            self._log.warning("voda_progress: report not sent: %r", err)
            return False, None

    def _token(self) -> Optional[str]:
        if self._token_file is None:
            return None
        try:
            with open(self._token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError:
            return None
        return token or None

    def _send(self, body: Dict[str, Any]):
        """POST body; return whether Voda accepted it (200), and for a busy
        answer (429, 503) with a Retry-After, the seconds to wait before
        trying again (else None). Never raises for network or HTTP
        errors."""
        data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
        if len(data) > MAX_BODY_BYTES:
            self._log.warning("voda_progress: report dropped: %d bytes, more than 64 KiB", len(data))
            return True, None  # sending it again would not help
        headers = {"Content-Type": "application/json"}
        token = self._token()
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        request = urllib.request.Request(self._url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                status = response.status
                raw = response.read(_MAX_REPLY_BYTES)
        except urllib.error.HTTPError as err:
            detail = err.read(200).decode("utf-8", "replace").strip()
            retry_after = None
            if err.code in _RETRY_STATUSES:
                retry_after = _retry_after(err.headers.get("Retry-After"))
            if retry_after is None:
                self._log.warning("voda_progress: Voda answered %d: %s", err.code, detail)
                return False, None
            retry_after *= 1 + random.random() / 4  # racing reporters spread out
            self._log.warning("voda_progress: Voda answered %d, trying again in %.1f s: %s", err.code, retry_after, detail)
            return False, retry_after
        except (OSError, ValueError) as err:  # URLError, timeouts, resets, bad URL
            self._log.warning("voda_progress: report not sent to %s: %s", self._url, err)
            return False, None
        if status != 200:
            self._log.warning("voda_progress: Voda answered %d", status)
            return False, None
        self._read_reply(raw)
        return True, None

    def _read_reply(self, raw: bytes) -> None:
        """Keep the reply and take its reportIntervalSeconds; a reply that is
        not a JSON object is logged and otherwise ignored (the report itself
        was accepted)."""
        try:
            reply = json.loads(raw.decode("utf-8"))
            if not isinstance(reply, dict):
                raise ValueError("not a JSON object")
        except ValueError as err:
            self._log.warning("voda_progress: unreadable reply from Voda: %s", err)
            return
        self._last_reply = reply
        self._advice = _batch_advice(reply.get("batch"))
        seconds = reply.get("reportIntervalSeconds")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds):
            with self._cond:
                self._interval = self._bounded(seconds)


def _retry_after(value: Optional[str]) -> Optional[float]:
    """A Retry-After header's delay in seconds, bounded to [1, 600] so that
    a server answering 0 cannot make the thread spin; None if absent or not
    a whole number of seconds (Voda sends no dates)."""
    value = (value or "").strip()
    if not (value.isascii() and value.isdigit()):
        return None
    return float(min(max(int(value), 1), MAX_INTERVAL))


def _batch_advice(batch: Any) -> Optional[Dict[str, Any]]:
    """A reply's batch advice, checked: positive integer sizes, accumulation
    steps at least 0 and a finite positive scale; None if absent or not
    that (a reply is never trusted to be well formed)."""
    if not isinstance(batch, dict):
        return None

    def integer(name: str, low: int) -> Optional[int]:
        value = batch.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= low:
            return value
        return None

    size, local, accum = integer("size", 1), integer("localSize", 1), integer("accumulationSteps", 0)
    scale = batch.get("lrScale")
    if size is None or local is None or accum is None or isinstance(scale, bool) or not isinstance(scale, (int, float)):
        return None
    if not math.isfinite(scale) or scale <= 0:
        return None
    return {"size": size, "localSize": local, "accumulationSteps": accum, "lrScale": float(scale)}


_default: Optional[Reporter] = None
_default_lock = threading.Lock()


def default_reporter() -> Reporter:
    """The process's shared Reporter.from_env(), made on first use, so that
    the framework helpers and user code report through one reporter."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Reporter.from_env()
        return _default
