"""A stand-in for Voda's report route: an HTTP server on 127.0.0.1 that
records every request and answers as the test tells it."""

import json
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

from voda_progress import Reporter

FAST = 0.05  # the tests' report interval, in seconds
REPLY = {"job": "job-a", "used": True, "allocation": {"workers": 4}, "reportIntervalSeconds": FAST}


class FakeVoda:
    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.status = 200
        self.headers: Dict[str, str] = {}  # sent with every answer
        # Answers (status, headers) for the next requests, before status.
        self.script: List[Tuple[int, Dict[str, str]]] = []
        self.reply: Any = dict(REPLY)  # a dict is sent as JSON, bytes as they are
        self._cond = threading.Condition()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with fake._cond:
                    fake.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "raw": raw, "body": json.loads(raw),
                         "at": time.monotonic()}
                    )
                    status, headers, reply = fake.status, fake.headers, fake.reply
                    if fake.script:
                        status, headers = fake.script.pop(0)
                    fake._cond.notify_all()
                data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/api/v1/jobs/job-a/progress"

    def bodies(self) -> List[Dict[str, Any]]:
        with self._cond:
            return [r["body"] for r in self.requests]

    def wait_for(self, count: int, timeout: float = 5.0) -> List[Dict[str, Any]]:
        """The bodies once at least count requests have come (or timeout)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.requests) < count and time.monotonic() < deadline:
                self._cond.wait(deadline - time.monotonic())
            return [r["body"] for r in self.requests]

    def wait_until(self, timeout: float = 5.0, **fields: Any) -> Dict[str, Any]:
        """The first body with these field values, once it has come. Reports
        are coalesced, so tests wait for a state rather than a count."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while time.monotonic() < deadline:
                for request in self.requests:
                    if all(request["body"].get(k) == v for k, v in fields.items()):
                        return request["body"]
                self._cond.wait(deadline - time.monotonic())
        raise AssertionError(f"no report with {fields} in {self.bodies()}")

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def fast_reporter(url: Optional[str], **kwargs: Any) -> Reporter:
    """A reporter with the tests' tiny interval (the _min_interval hook)."""
    kwargs.setdefault("interval", FAST)
    kwargs.setdefault("_min_interval", 0.01)
    return Reporter(url, **kwargs)


def counters(steps: int, **extra: Any) -> Dict[str, Any]:
    """The required report arguments, with steps as given."""
    return dict(dict(generation="g1", workers=4, steps=steps, epoch=steps / 100), **extra)


class FakeVodaTest(unittest.TestCase):
    """A test case with a fresh FakeVoda, stopped after the test."""

    def setUp(self) -> None:
        self.voda = FakeVoda()
        self.addCleanup(self.voda.stop)

    def new_reporter(self, url: Optional[str] = None, **kwargs: Any) -> Reporter:
        """A fast reporter to the fake Voda (or url), closed after the test."""
        r = fast_reporter(self.voda.url if url is None else url, **kwargs)
        self.addCleanup(r.close)
        return r
