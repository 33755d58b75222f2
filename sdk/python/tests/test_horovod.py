"""The Horovod elastic helper and the Keras callback, with a fake hvd."""

import unittest

from voda_progress.horovod import HorovodTracker
from voda_progress.keras import ProgressCallback

from .fakevoda import FakeVodaTest


class FakeHvd:
    """The part of horovod.torch / horovod.tensorflow the helper reads."""

    def __init__(self, size: int = 4, rank: int = 0, cross_size: int = 2) -> None:
        self._size, self._rank, self._cross = size, rank, cross_size

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank

    def cross_size(self) -> int:
        return self._cross


class HorovodTest(FakeVodaTest):
    def setUp(self) -> None:
        super().setUp()
        self.reporter = self.new_reporter()
        self.hvd = FakeHvd()

    def test_steps_and_epochs_in_a_hand_written_loop(self) -> None:
        tracker = HorovodTracker(hvd=self.hvd, batch_size=16, reporter=self.reporter)
        for _ in range(5):
            tracker.step()
        tracker.epoch_end(1)
        last = self.voda.wait_until(steps=5, epoch=1.0)
        self.assertRegex(last["generation"], r"^p[0-9a-f]{8}-0-4$")
        self.assertEqual((last["workers"], last["nodes"]), (4, 2))
        self.assertEqual((last["steps"], last["samples"], last["epoch"]), (5, 5 * 16 * 4, 1.0))

    def test_reset_bumps_generation_and_rereads_size(self) -> None:
        tracker = HorovodTracker(hvd=self.hvd, reporter=self.reporter)
        tracker.step()
        first = tracker.generation()
        self.hvd._size, self.hvd._cross = 2, 1
        tracker.on_reset()
        tracker.set_counters(steps=0, epoch=0)  # rolled back to the last commit: allowed now
        tracker.step()
        tracker.epoch_end()
        last = self.voda.wait_until(workers=2, epoch=1.0)
        self.assertNotEqual(last["generation"], first)
        self.assertTrue(last["generation"].endswith("-1-2"))
        self.assertEqual((last["workers"], last["nodes"], last["steps"], last["epoch"]), (2, 1, 1, 1.0))

    def test_a_rank_that_is_no_longer_zero_goes_quiet(self) -> None:
        tracker = HorovodTracker(hvd=self.hvd, reporter=self.reporter)
        tracker.step()
        self.voda.wait_for(1)
        self.hvd._rank = 1
        tracker.on_reset()
        self.assertFalse(self.reporter.active)
        sent = len(self.voda.wait_for(1))
        tracker.step()
        tracker.epoch_end()
        self.reporter.close()
        self.assertEqual(len(self.voda.bodies()), sent)

    def test_keras_callback(self) -> None:
        tracker = HorovodTracker(hvd=self.hvd, batch_size=8, reporter=self.reporter)
        callback = ProgressCallback(tracker)
        callback.params = {"epochs": 3, "steps": 10}
        for batch in range(5):
            callback.on_train_batch_end(batch, {"loss": 1.0})
        self.assertEqual((tracker.steps, tracker.epoch), (5, 0.5))
        logs = {"loss": 0.5, "accuracy": 0.75, "bad name": 1.0, "note": "text", "nan": float("nan")}
        callback.on_epoch_end(0, logs)
        last = self.voda.wait_until(epoch=1.0)
        self.assertEqual((last["steps"], last["epoch"]), (5, 1.0))
        self.assertEqual(last["metrics"], {"loss": 0.5, "accuracy": 0.75})

    def test_keras_callback_builds_its_tracker(self) -> None:
        callback = ProgressCallback(hvd=self.hvd, reporter=self.reporter, total_epochs=3)
        callback.on_train_batch_end(0)  # no params: no epoch progress, still a step
        callback.on_epoch_end(0)
        last = self.voda.wait_until(epoch=1.0)
        self.assertEqual((last["steps"], last["epoch"], last["totalEpochs"]), (1, 1.0, 3.0))


if __name__ == "__main__":
    unittest.main()
