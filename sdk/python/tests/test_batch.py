"""The batch size Voda advises: bounds in the reports, the advice kept
from the replies, and what a reply that is not well formed leaves."""

import os
import time
import unittest
from unittest import mock

from voda_progress import Reporter
from voda_progress import torch as vp_torch
from voda_progress._validate import InvalidReport, build_report

from .fakevoda import REPLY, FakeVodaTest, counters
from .test_torch import TORCHRUN, FakeOptimizer

ADVICE = {"size": 768, "localSize": 48, "accumulationSteps": 1, "lrScale": 2.5}


class BatchAdviceTest(FakeVodaTest):
    def wait_for_advice(self, r: Reporter, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while r.batch_advice is None and time.monotonic() < deadline:
            time.sleep(0.01)

    def test_keeps_the_advice_of_the_last_reply(self) -> None:
        r = self.new_reporter()
        self.assertEqual((r.batch_size(256), r.local_batch_size(32), r.accumulation_steps(), r.lr_scale()), (256, 32, 0, 1.0))
        self.voda.reply = dict(REPLY, batch=ADVICE)
        r.report(**counters(1, init_batch_size=256, max_batch_size=4096, max_local_batch_size=64))
        self.wait_for_advice(r)
        self.assertEqual(r.batch_advice, ADVICE)
        self.assertEqual((r.batch_size(256), r.local_batch_size(32), r.accumulation_steps(), r.lr_scale()), (768, 48, 1, 2.5))
        body = self.voda.wait_for(1)[0]
        self.assertEqual((body["initBatchSize"], body["maxBatchSize"], body["maxLocalBatchSize"]), (256, 4096, 64))
        # A reply without advice (the job's bounds became fixed, say)
        # drops it: the job's own batch again.
        self.voda.reply = dict(REPLY)
        r.report(**counters(2))
        self.voda.wait_for(2)
        deadline = time.monotonic() + 5
        while r.batch_advice is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual((r.batch_size(256), r.lr_scale()), (256, 1.0))

    def test_ignores_malformed_advice(self) -> None:
        for bad in (
            [1, 2],
            {"size": 0, "localSize": 1, "accumulationSteps": 0, "lrScale": 1},
            {"size": 64, "localSize": True, "accumulationSteps": 0, "lrScale": 1},
            {"size": 64, "localSize": 8, "accumulationSteps": -1, "lrScale": 1},
            {"size": 64, "localSize": 8, "accumulationSteps": 0, "lrScale": "2"},
            {"size": 64, "localSize": 8, "accumulationSteps": 0, "lrScale": -1},
            {"size": 64.5, "localSize": 8, "accumulationSteps": 0, "lrScale": 1},
        ):
            with self.subTest(batch=bad):
                r = self.new_reporter()
                self.voda.reply = dict(REPLY, batch=bad)
                r.report(**counters(1))
                self.voda.wait_until(steps=1)
                time.sleep(0.05)
                self.assertIsNone(r.batch_advice)
                self.assertEqual(r.batch_size(128), 128)

    def test_bounds_are_checked_as_voda_checks_them(self) -> None:
        base = dict(generation="g", workers=4, steps=1, epoch=0)
        for fields, message in (
            (dict(maxBatchSize=512), "initBatchSize: required"),
            (dict(initBatchSize=512, maxBatchSize=256), "maxBatchSize: 256 is below"),
            (dict(initBatchSize=128, maxBatchSize=512, minLocalBatchSize=64, maxLocalBatchSize=32), "minLocalBatchSize"),
            (dict(globalBatchSize=64, localBatchSize=32), "localBatchSize"),
            (dict(globalBatchSize=256, localBatchSize=32, accumulationSteps=2), "accumulationSteps"),
            (dict(accumulationSteps=-1), "accumulationSteps"),
        ):
            with self.subTest(fields=fields):
                with self.assertRaisesRegex(InvalidReport, message):
                    build_report(dict(base, **fields))
        ok = build_report(dict(base, globalBatchSize=256, localBatchSize=32, accumulationSteps=1, initBatchSize=128, maxBatchSize=1024))
        self.assertEqual((ok["accumulationSteps"], ok["maxBatchSize"]), (1, 1024))

    def test_tracker_reports_bounds_and_the_batch_it_runs(self) -> None:
        reporter = self.new_reporter()
        optimizer = FakeOptimizer()
        with mock.patch.dict(os.environ, TORCHRUN):
            tracker = vp_torch.track(
                optimizer, reporter=reporter, batch_size=32, init_batch_size=256, max_batch_size=4096, max_local_batch_size=64
            )
        optimizer.step()
        first = self.voda.wait_until(steps=1)
        self.assertEqual((first["globalBatchSize"], first["localBatchSize"], first["accumulationSteps"]), (256, 32, 0))
        self.assertEqual((first["initBatchSize"], first["maxBatchSize"], first["maxLocalBatchSize"]), (256, 4096, 64))
        tracker.set_batch(48, accumulation_steps=1)
        optimizer.step()
        tracker.epoch_end(1)
        last = self.voda.wait_until(steps=2)
        self.assertEqual((last["globalBatchSize"], last["localBatchSize"], last["accumulationSteps"]), (768, 48, 1))
        self.assertEqual(tracker.samples, 256 + 768)


if __name__ == "__main__":
    unittest.main()
