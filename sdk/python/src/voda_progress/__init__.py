"""Job-side progress reports for Voda, the GPU scheduler for elastic deep
learning jobs: the training process tells Voda how far and how fast it runs
(docs/progress.md in the Voda repository is the protocol).

    from voda_progress import default_reporter
    reporter = default_reporter()          # inactive outside Voda
    reporter.report(generation="g0", workers=1, steps=step, epoch=epoch)

voda_progress.torch and voda_progress.horovod wrap this for PyTorch elastic
and Horovod elastic; voda_progress.keras has a Keras callback.
"""

from .reporter import Reporter, default_reporter

__all__ = ["Reporter", "default_reporter"]
__version__ = "0.1.0"
