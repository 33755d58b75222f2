"""The Reporter against a fake Voda: when it sends, what, and that nothing
that goes wrong on the network reaches the training loop."""

import math
import os
import socket
import tempfile
import time
import unittest
from unittest import mock

from voda_progress import Reporter
from voda_progress.reporter import MAX_INTERVAL, MIN_INTERVAL, _retry_after

from .fakevoda import FAST, FakeVodaTest, counters

QUICK = 0.05  # report() and epoch_end() must return well within this


class ReporterTest(FakeVodaTest):
    def test_inactive_outside_voda(self) -> None:
        with mock.patch.dict(os.environ, {}, clear=True):
            r = Reporter.from_env()
        self.assertFalse(r.active)
        r.report(**counters(1))
        r.epoch_end()
        r.close()
        self.assertIsNone(r._thread)  # not even a thread outside Voda

    def test_only_rank_zero_sends(self) -> None:
        env = {"VODA_PROGRESS_URL": self.voda.url, "VODA_REPORT_INTERVAL": str(FAST)}
        with mock.patch.dict(os.environ, dict(env, RANK="1")):
            self.assertFalse(Reporter.from_env().active)
        with mock.patch.dict(os.environ, dict(env, RANK="0")):
            self.assertTrue(Reporter.from_env().active)
            self.assertFalse(Reporter.from_env(rank=3).active)
        other = self.new_reporter(rank=2)
        other.report(**counters(5))
        other.close()
        first = self.new_reporter(rank=0)
        first.report(**counters(6))
        first.close()
        bodies = self.voda.bodies()  # the report (unless close() came first) and the final one
        self.assertEqual({b["steps"] for b in bodies}, {6})
        self.assertIs(bodies[-1]["final"], True)

    def test_coalesces_reports_within_an_interval(self) -> None:
        self.voda.reply = {"used": False, "reason": "first"}  # no interval: keep ours
        r = self.new_reporter(interval=0.3)
        r.report(**counters(0))
        self.assertEqual(len(self.voda.wait_for(1)), 1)  # the first report goes out at once
        for steps in range(1, 101):
            r.report(**counters(steps))
        bodies = self.voda.wait_for(2)
        time.sleep(0.4)
        self.assertEqual(len(self.voda.bodies()), 2)
        self.assertEqual(bodies[1]["steps"], 100)
        self.assertEqual(bodies[1]["epoch"], 1.0)

    def slow_reporter_after_first_send(self) -> Reporter:
        """A reporter with a 30 s interval whose first report has gone out,
        so that only epoch_end() or close() can send before the test ends."""
        self.voda.reply = {"used": True}
        r = self.new_reporter(interval=30)
        r.report(**counters(0))
        self.voda.wait_for(1)
        return r

    def test_epoch_end_sends_at_once(self) -> None:
        r = self.slow_reporter_after_first_send()
        r.report(**counters(50))
        start = time.monotonic()
        r.epoch_end()
        bodies = self.voda.wait_for(2, timeout=2)
        self.assertLess(time.monotonic() - start, 1.0)
        self.assertEqual(bodies[1]["steps"], 50)

    def test_close_sends_final_report(self) -> None:
        r = self.slow_reporter_after_first_send()
        r.report(**counters(7))
        r.close()
        bodies = self.voda.bodies()
        self.assertEqual(len(bodies), 2)
        self.assertEqual(bodies[1]["steps"], 7)
        self.assertIs(bodies[1]["final"], True)
        self.assertNotIn("final", bodies[0])
        r.report(**counters(8))  # after close: ignored
        r.close()
        self.assertEqual(len(self.voda.bodies()), 2)

    def test_token_file_is_reread_at_every_send(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "token")
            with open(path, "w") as f:
                f.write("first-token\n")
            r = self.new_reporter(token_file=path)
            r.report(**counters(1))
            self.voda.wait_for(1)
            with open(path, "w") as f:
                f.write("second-token")  # what the kubelet's rotation does
            r.report(**counters(2))
            self.voda.wait_for(2)
            os.remove(path)
            r.report(**counters(3))
            self.voda.wait_for(3)
        auth = [req["headers"].get("Authorization") for req in self.voda.requests]
        self.assertEqual(auth, ["Bearer first-token", "Bearer second-token", None])

    def test_request_is_json_post_to_the_url(self) -> None:
        r = self.new_reporter()
        r.report(**counters(1))
        self.voda.wait_for(1)
        request = self.voda.requests[0]
        self.assertEqual(request["path"], "/api/v1/jobs/job-a/progress")
        self.assertEqual(request["headers"]["Content-Type"], "application/json")

    def test_json_field_names_and_omission_of_none(self) -> None:
        r = self.new_reporter()
        r.report(generation="g1", workers=4, steps=10, epoch=0.5)
        minimal = self.voda.wait_for(1)[0]
        self.assertEqual(minimal, {"generation": "g1", "workers": 4, "steps": 10, "epoch": 0.5})
        r.report(
            generation="g1", workers=4, nodes=2, steps=20, samples=640, epoch=1, total_epochs=90,
            global_batch_size=32, local_batch_size=8, step_seconds=0.21, grad_sq_norm=3.5,
            grad_variance=0.25, metrics={"loss": 0.41, "top-1.acc": 0.87},
        )
        full = self.voda.wait_for(2)[1]
        self.assertEqual(
            sorted(full),
            sorted(["generation", "workers", "nodes", "steps", "samples", "epoch", "totalEpochs",
                    "globalBatchSize", "localBatchSize", "stepSeconds", "gradSqNorm", "gradVariance",
                    "metrics"]),
        )
        self.assertEqual(full["metrics"], {"loss": 0.41, "top-1.acc": 0.87})
        self.assertEqual(full["totalEpochs"], 90.0)

    def test_invalid_reports_are_dropped_with_a_log_line(self) -> None:
        r = self.new_reporter()
        r.report(**counters(10))
        self.voda.wait_for(1)
        bad = [
            counters(11, epoch=math.nan),
            counters(11, step_seconds=math.inf),
            counters(11, step_seconds=0),
            counters(-1, generation="g2"),
            counters(11, workers=0),
            counters(11, workers=True),
            counters(11, nodes=5),
            counters(11, generation=""),
            counters(11, generation="g\n1"),
            counters(11, metrics={"bad name": 1.0}),
            counters(11, metrics={"loss\n": 1.0}),
            counters(11, metrics={f"m{i}": 1.0 for i in range(17)}),
            counters(11, metrics={"loss": math.nan}),
            counters(9),  # a counter went down within generation g1
        ]
        with self.assertLogs("voda_progress", "WARNING") as logs:
            for fields in bad:
                start = time.monotonic()
                r.report(**fields)
                self.assertLess(time.monotonic() - start, QUICK)
        self.assertEqual(len(logs.records), 1)  # at most one line a minute
        self.assertIn("epoch", logs.output[0])
        time.sleep(4 * FAST)
        self.assertEqual(len(self.voda.bodies()), 1)
        r.report(**counters(5, generation="g2"))  # a new generation may start lower
        self.assertEqual(self.voda.wait_for(2)[1]["steps"], 5)

    def test_server_error_neither_raises_nor_blocks(self) -> None:
        self.voda.status = 500
        self.voda.reply = {"error": "boom"}
        r = self.new_reporter()
        with self.assertLogs("voda_progress", "WARNING") as logs:
            r.report(**counters(1))
            self.voda.wait_for(2)  # no newer report: the same one is tried again
        self.assertEqual(len(logs.records), 1)
        self.assertIn("500", logs.output[0])
        self.assertIsNone(r.last_reply)
        self.voda.status = 200
        self.voda.reply = {"used": True, "reportIntervalSeconds": FAST}
        r.report(**counters(2))
        bodies = self.voda.wait_for(len(self.voda.requests) + 1)
        self.assertEqual(bodies[-1]["steps"], 2)

    def gap(self, first: int, second: int) -> float:
        """Seconds between the arrivals of requests first and second."""
        return self.voda.requests[second]["at"] - self.voda.requests[first]["at"]

    def test_busy_answer_is_tried_again_after_retry_after(self) -> None:
        """A 429 with Retry-After (Voda applying the job's other reports) is
        tried again after that delay: not at the next interval (30 s here),
        and not sooner, even at an epoch's end; with the newest counters."""
        r = self.slow_reporter_after_first_send()
        self.voda.script = [(429, {"Retry-After": "1"})]
        with self.assertLogs("voda_progress", "WARNING") as logs:
            r.report(**counters(50))
            r.epoch_end()
            self.voda.wait_for(2)
            r.report(**counters(60))
            r.epoch_end()  # must wait for the Retry-After all the same
            bodies = self.voda.wait_for(3, timeout=5)
        self.assertIn("429", logs.output[0])
        self.assertEqual([b["steps"] for b in bodies], [0, 50, 60])
        self.assertGreaterEqual(self.gap(1, 2), 1.0)
        self.assertLess(self.gap(1, 2), 2.0)  # 1 s and at most a quarter more, not the 30 s interval

    def test_retry_after_longer_than_the_interval(self) -> None:
        """A reporter whose interval is shorter than the Retry-After waits
        for the Retry-After; 503 is busy too."""
        for status in (429, 503):
            with self.subTest(status=status):
                self.voda.requests.clear()
                self.voda.script = [(status, {"Retry-After": "1"})]
                r = self.new_reporter()  # interval FAST
                with self.assertLogs("voda_progress", "WARNING"):
                    r.report(**counters(1))
                    self.voda.wait_for(2, timeout=5)
                self.assertGreaterEqual(self.gap(0, 1), 1.0)
                r.close()

    def test_final_report_is_tried_again_within_close_timeout(self) -> None:
        """close() tries the final report again after a Retry-After that ends
        within its 2 s, and gives up on one that does not."""
        r = self.slow_reporter_after_first_send()
        self.voda.script = [(429, {"Retry-After": "1"})]
        r.report(**counters(7))
        with self.assertLogs("voda_progress", "WARNING"):
            r.close()
        bodies = self.voda.bodies()
        self.assertEqual([(b["steps"], b.get("final")) for b in bodies], [(0, None), (7, True), (7, True)])

        self.voda.requests.clear()
        late = self.slow_reporter_after_first_send()
        self.voda.script = [(429, {"Retry-After": "5"})]
        start = time.monotonic()
        with self.assertLogs("voda_progress", "WARNING"):
            late.close()
        late._thread.join(1)
        self.assertFalse(late._thread.is_alive())
        self.assertLess(time.monotonic() - start, 2.5)
        self.assertEqual(len(self.voda.bodies()), 2)  # the first report and one final

    def test_retry_after_parsing(self) -> None:
        for value, want in [("1", 1.0), (" 3 ", 3.0), ("0", 1.0), ("100000", MAX_INTERVAL), (None, None), ("", None),
                            ("soon", None), ("1.5", None), ("-1", None), ("\u00b2", None),
                            ("Wed, 21 Oct 2026 07:28:00 GMT", None)]:
            with self.subTest(value=value):
                self.assertEqual(_retry_after(value), want)

    def test_connection_refused_neither_raises_nor_blocks(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        r = self.new_reporter(url=f"http://127.0.0.1:{port}/api/v1/jobs/job-a/progress")
        with self.assertLogs("voda_progress", "WARNING"):
            for steps in range(50):
                start = time.monotonic()
                r.report(**counters(steps))
                r.epoch_end()
                self.assertLess(time.monotonic() - start, QUICK)
                time.sleep(0.005)
            start = time.monotonic()
            r.close()
        self.assertLess(time.monotonic() - start, 2.5)

    def test_close_does_not_wait_for_a_silent_server(self) -> None:
        with socket.socket() as silent:  # accepts connections, never answers
            silent.bind(("127.0.0.1", 0))
            silent.listen(8)
            url = f"http://127.0.0.1:{silent.getsockname()[1]}/p"
            r = self.new_reporter(url=url, close_timeout=0.3, timeout=0.6)
            with self.assertLogs("voda_progress", "WARNING") as logs:
                r.report(**counters(1))
                time.sleep(0.1)
                start = time.monotonic()
                r.close()
                self.assertLess(time.monotonic() - start, 1.0)
                r._thread.join(2)  # the send in flight times out, and is logged
        self.assertIn("timed out", logs.output[0])

    def test_garbage_reply_neither_raises_nor_blocks(self) -> None:
        self.voda.reply = b"<html>not json"
        r = self.new_reporter()
        with self.assertLogs("voda_progress", "WARNING") as logs:
            r.report(**counters(1))
            self.voda.wait_for(1)
            time.sleep(FAST)
        self.assertIn("reply", logs.output[0])
        self.assertIsNone(r.last_reply)
        self.voda.reply = [1, 2]  # JSON, but not an object
        r.report(**counters(2))
        self.voda.wait_for(2)
        self.voda.reply = {"used": True, "allocation": {"workers": 2}}
        r.report(**counters(3))
        self.voda.wait_for(3)
        time.sleep(FAST)
        self.assertEqual(r.last_reply["allocation"]["workers"], 2)

    def test_reply_interval_is_honoured(self) -> None:
        self.voda.reply = {"used": True, "reportIntervalSeconds": 0.25}
        r = self.new_reporter(interval=0.01)
        deadline = time.monotonic() + 1.0
        steps = 0
        while time.monotonic() < deadline:
            steps += 1
            r.report(**counters(steps))
            time.sleep(0.005)
        self.assertEqual(r.interval, 0.25)
        sent = len(self.voda.bodies())
        self.assertGreaterEqual(sent, 2)
        self.assertLessEqual(sent, 5)  # one at once, then one each 0.25 s

    def test_reply_interval_is_bounded(self) -> None:
        self.voda.reply = {"reportIntervalSeconds": 10**6}
        r = self.new_reporter()
        r.report(**counters(1))
        self.voda.wait_for(1)
        time.sleep(FAST)
        self.assertEqual(r.interval, MAX_INTERVAL)

        self.voda.reply = {"reportIntervalSeconds": 1}
        real = Reporter(self.voda.url)  # without the test hook
        self.addCleanup(real.close)
        self.assertEqual(real.interval, 30.0)
        real.report(**counters(1))
        self.voda.wait_for(2)
        time.sleep(FAST)
        self.assertEqual(real.interval, MIN_INTERVAL)
        self.assertEqual(Reporter(self.voda.url, interval=0.5).interval, MIN_INTERVAL)

    def test_interval_from_environment(self) -> None:
        env = {"VODA_PROGRESS_URL": self.voda.url, "VODA_REPORT_INTERVAL": "120"}
        with mock.patch.dict(os.environ, env):
            self.assertEqual(Reporter.from_env().interval, 120.0)
        with mock.patch.dict(os.environ, dict(env, VODA_REPORT_INTERVAL="1")):
            self.assertEqual(Reporter.from_env().interval, MIN_INTERVAL)
        with mock.patch.dict(os.environ, dict(env, VODA_REPORT_INTERVAL="soon")):
            with self.assertLogs("voda_progress", "WARNING"):
                self.assertEqual(Reporter.from_env().interval, 30.0)

    def test_last_reply(self) -> None:
        r = self.new_reporter()
        self.assertIsNone(r.last_reply)
        r.report(**counters(1))
        self.voda.wait_for(1)
        time.sleep(FAST)
        self.assertEqual(r.last_reply["allocation"], {"workers": 4})


if __name__ == "__main__":
    unittest.main()
