package estimate

import (
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
)

// Estimator gives a job's estimates from what is known of it.
type Estimator interface {
	// Estimate returns job j's estimates now.
	Estimate(j Job) model.Estimates
	// Forget drops a job that left (finished, failed or deleted); what it
	// measured stays with its application.
	Forget(job string)
}

// Job is what the caller knows of a job when it asks for its estimates.
type Job struct {
	Name string
	// App names what the job trains: jobs of one application share what
	// they measured.
	App string
	// MaxWorkers is how far the speedup curve goes, in GPUs (one process
	// each, as reports count workers): the job's maximum workers times its
	// GPUs per worker, capped by the GPUs of the cluster (at least 1).
	MaxWorkers int
	// Workers is how many GPUs (processes) the job runs on now (0:
	// waiting): its curve reaches at least that far.
	Workers int
	// Remaining is the work left in the unit its throughput measurements
	// count work in (epochs for the server, the simulator's progress);
	// negative: unknown.
	Remaining float64
	// RemainingSteps is the work left in optimizer steps of the job's
	// initial batch, which goodput counts progress in; negative: unknown
	// (then Remaining over the measured throughput stands).
	RemainingSteps float64
	// Bounds are the batch sizes the job lets the scheduler choose from;
	// InitBatch 0: the job declared no batch, and step times cannot
	// model it. Bounds.Fixed pins a job that does not follow the advice.
	Bounds goodput.Bounds
	// Grad are the job's latest gradient statistics (zero: unknown).
	Grad goodput.GradStats
}
