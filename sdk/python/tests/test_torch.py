"""The PyTorch helper with a fake optimizer and torchrun's environment."""

import os
import time
import unittest
import weakref
from functools import wraps
from unittest import mock

from voda_progress import torch as vp_torch

from .fakevoda import FakeVodaTest

TORCHRUN = {
    "WORLD_SIZE": "8",
    "RANK": "0",
    "LOCAL_WORLD_SIZE": "4",
    "TORCHELASTIC_RUN_ID": "r7f3",
    "TORCHELASTIC_RESTART_COUNT": "2",
}


class FakeOptimizer:
    """What track() needs of a torch.optim.Optimizer: a step method."""

    def __init__(self) -> None:
        self.calls = 0
        self._step_count = 0

    def step(self, closure=None):
        self.calls += 1
        return closure() if closure is not None else None


def with_counter(method):
    """torch 1.13's LR scheduler wrapping of optimizer.step, verbatim in
    substance: it needs a bound method (__self__, __func__)."""
    instance_ref = weakref.ref(method.__self__)
    func = method.__func__
    cls = instance_ref().__class__

    @wraps(func)
    def wrapper(*args, **kwargs):
        instance = instance_ref()
        instance._step_count += 1
        return func.__get__(instance, cls)(*args, **kwargs)

    wrapper._with_counter = True
    return wrapper


class TorchTest(FakeVodaTest):
    def setUp(self) -> None:
        super().setUp()
        self.reporter = self.new_reporter()

    def track(self, optimizer, **kwargs):
        with mock.patch.dict(os.environ, TORCHRUN):
            return vp_torch.track(optimizer, reporter=self.reporter, **kwargs)

    def test_counts_steps_and_samples_from_torchrun_environment(self) -> None:
        optimizer = FakeOptimizer()
        tracker = self.track(optimizer, batch_size=32, total_epochs=90)
        self.assertEqual(optimizer.step(lambda: 0.5), 0.5)  # arguments and result pass through
        for _ in range(9):
            optimizer.step()
        self.assertEqual((optimizer.calls, tracker.steps, tracker.samples), (10, 10, 10 * 32 * 8))
        tracker.epoch_end(1)
        last = self.voda.wait_until(steps=10, epoch=1.0)
        self.assertEqual(last["generation"], "r7f3-2-8")
        self.assertEqual((last["workers"], last["nodes"]), (8, 2))
        self.assertEqual((last["steps"], last["samples"], last["epoch"]), (10, 2560, 1.0))
        self.assertEqual((last["globalBatchSize"], last["localBatchSize"]), (256, 32))
        self.assertEqual(last["totalEpochs"], 90.0)

    def test_measures_mean_step_time(self) -> None:
        optimizer = FakeOptimizer()
        self.track(optimizer)
        for _ in range(6):
            time.sleep(0.02)
            optimizer.step()
        self.voda.wait_until(steps=6)
        bodies = self.voda.bodies()
        seconds = [b["stepSeconds"] for b in bodies if "stepSeconds" in b]
        self.assertTrue(seconds)
        for value in seconds:
            self.assertGreater(value, 0.015)
            self.assertLess(value, 0.2)
        self.assertNotIn("samples", bodies[-1])  # no batch size given

    def test_epoch_progress_and_continuing_from_a_checkpoint(self) -> None:
        optimizer = FakeOptimizer()
        tracker = self.track(optimizer, batch_size=4, start_steps=1000, start_samples=32000, start_epoch=3)
        optimizer.step()
        tracker.set_epoch_progress(0.25)
        self.assertEqual((tracker.steps, tracker.samples, tracker.epoch), (1001, 32032, 3.25))
        tracker.set_epoch_progress(0.1)  # never backwards
        self.assertEqual(tracker.epoch, 3.25)
        tracker.set_metrics(loss=0.4)
        tracker.epoch_end(4)
        tracker.set_epoch_progress(0.5)
        self.assertEqual(tracker.epoch, 4.5)
        last = self.voda.wait_until(epoch=4.0)
        self.assertEqual(last["metrics"], {"loss": 0.4})
        self.assertEqual((last["steps"], last["samples"]), (1001, 32032))

    def test_works_under_an_lr_scheduler(self) -> None:
        optimizer = FakeOptimizer()
        tracker = self.track(optimizer)
        optimizer.step = with_counter(optimizer.step)  # a scheduler made after track()
        optimizer.step()
        self.assertEqual((optimizer.calls, optimizer._step_count, tracker.steps), (1, 1, 1))
        before = FakeOptimizer()
        before.step = with_counter(before.step)  # a scheduler made before track()
        tracker = self.track(before)
        before.step()
        self.assertEqual((before.calls, before._step_count, tracker.steps), (1, 1, 1))

    def test_without_torchrun(self) -> None:
        with mock.patch.dict(os.environ, {"VODA_PROGRESS_URL": self.voda.url}, clear=True):
            tracker = vp_torch.track(FakeOptimizer(), reporter=self.reporter)
        self.assertEqual((tracker.workers(), tracker.nodes()), (1, None))
        self.assertRegex(tracker.generation(), r"^p[0-9a-f]{8}-0-1$")

    def test_outside_voda_is_a_no_op(self) -> None:
        with mock.patch.dict(os.environ, {"WORLD_SIZE": "2", "RANK": "0"}, clear=True):
            with mock.patch("voda_progress.reporter._default", None):
                optimizer = FakeOptimizer()
                tracker = vp_torch.track(optimizer)
                optimizer.step()
                tracker.epoch_end(1)
        self.assertFalse(tracker.reporter.active)
        self.assertEqual(tracker.steps, 1)

    def test_only_rank_zero_reports(self) -> None:
        env = dict(TORCHRUN, RANK="3", VODA_PROGRESS_URL=self.voda.url)
        with mock.patch.dict(os.environ, env):
            with mock.patch("voda_progress.reporter._default", None):
                tracker = vp_torch.track(FakeOptimizer())
        self.assertFalse(tracker.reporter.active)


if __name__ == "__main__":
    unittest.main()
