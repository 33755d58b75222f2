package model

import (
	"fmt"
	"time"
)

// Status is the lifecycle state of a training job.
type Status string

// Job statuses. Waiting jobs are known to the scheduler but hold no GPUs;
// Running jobs hold at least their minimum.
const (
	StatusSubmitted Status = "Submitted"
	StatusWaiting   Status = "Waiting"
	StatusRunning   Status = "Running"
	StatusCompleted Status = "Completed"
	StatusFailed    Status = "Failed"
	StatusCanceled  Status = "Canceled"
)

// Done reports whether the status is terminal.
func (s Status) Done() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCanceled
}

// JobSpec is what the user asked for. It does not change while the job
// lives, except Priority.
type JobSpec struct {
	// Name is unique among live jobs.
	Name string
	// GPUType selects the per-GPU-type scheduler.
	GPUType string
	// MinWorkers and MaxWorkers bound an elastic job, in workers (pods).
	MinWorkers int
	MaxWorkers int
	// RequestedWorkers is what non-elastic algorithms give the job.
	RequestedWorkers int
	// GPUsPerWorker is how many GPUs each worker pod holds (G, from its
	// worker container's nvidia.com/gpu); the job holds workers x G GPUs.
	// 0 is read as 1, as for jobs stored before the field existed; see
	// PerWorker.
	GPUsPerWorker int
	// Priority is the user's priority, 0 being the highest.
	Priority int
	// Team is the team the job belongs to (its namespace); "" is the
	// default team. Teams share the GPUs by their quotas.
	Team string
	// Epochs is the number of epochs to train, 0 if unknown.
	Epochs int
	// SubmitTime is when the job reached Voda.
	SubmitTime time.Time
}

// Validate reports the first inconsistency in the spec.
func (s JobSpec) Validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("name: must not be empty")
	case s.MaxWorkers < 1:
		return fmt.Errorf("maxWorkers: %d must be at least 1", s.MaxWorkers)
	case s.MinWorkers < 1:
		return fmt.Errorf("minWorkers: %d must be at least 1", s.MinWorkers)
	case s.MinWorkers > s.MaxWorkers:
		return fmt.Errorf("minWorkers: %d is above maxWorkers %d", s.MinWorkers, s.MaxWorkers)
	case s.RequestedWorkers < s.MinWorkers || s.RequestedWorkers > s.MaxWorkers:
		return fmt.Errorf("requestedWorkers: %d is outside [%d, %d]", s.RequestedWorkers, s.MinWorkers, s.MaxWorkers)
	case s.GPUsPerWorker < 0:
		return fmt.Errorf("gpusPerWorker: %d must not be negative", s.GPUsPerWorker)
	case s.Priority < 0:
		return fmt.Errorf("priority: %d must not be negative", s.Priority)
	case s.Epochs < 0:
		return fmt.Errorf("epochs: %d must not be negative", s.Epochs)
	}
	return nil
}

// PerWorker returns G, the GPUs each of the job's workers holds: at
// least 1.
func (s *JobSpec) PerWorker() int { return max(s.GPUsPerWorker, 1) }

// JobState is what the scheduler knows of a job's progress.
type JobState struct {
	Status Status
	// GPUs is the number of GPUs (workers) the job holds now.
	GPUs int
	// Placement says where those workers run.
	Placement JobPlacement
	// AttainedService is the GPU-seconds the job has held so far.
	AttainedService float64
	// FirstStart is when the job first got GPUs; zero if never.
	FirstStart time.Time
	// LastChange is when the job's GPU count last changed (start, resize,
	// halt); zero if never.
	LastChange time.Time
	// PrevGPUs is the job's GPU count before its last change: with GPUs
	// it says whether the job last grew or shrank.
	PrevGPUs int
	// Queue is the job's priority queue for multi-level algorithms
	// (Tiresias); 0 is the highest.
	Queue int
	// RunSeconds is the wall time the job has held GPUs so far; the rest
	// of its life it waited.
	RunSeconds float64
	// QueueSince orders jobs within a queue: when the job entered it.
	QueueSince time.Time
	// QueueService is the GPU-seconds attained since the job entered queue
	// 0 the last time; demotion thresholds compare against it.
	QueueService float64
	// QueueRunSeconds is the wall time the job held GPUs since it entered
	// queue 0 the last time; the starvation knob compares against it.
	QueueRunSeconds float64
	// WaitingSince is when the job last lost (or never had) its GPUs while
	// not done; zero while it runs.
	WaitingSince time.Time
	// Restarts counts re-placements after the first start.
	Restarts int
}

// Estimates are the collector's view of a job's performance.
type Estimates struct {
	// RemainingSeconds is the estimated remaining run time on one GPU.
	// Negative means unknown.
	RemainingSeconds float64
	// Speedup[k] is the estimated speedup on k GPUs over one GPU
	// (Speedup[0] = 0, Speedup[1] = 1). A curve with fewer than two entries
	// means unknown, taken as linear. Beyond the end of the curve the
	// speedup stays at its last value.
	Speedup []float64
	// RestartSeconds is what a new placement costs the job before it
	// progresses again (its measured restart time); 0 when unknown.
	RestartSeconds float64
	// Batch[k] is the global batch size the job would run on k GPUs, the
	// one Speedup[k] assumes (Batch[0] = 0). Nil for a job whose batch
	// size is fixed or unknown; beyond the end of the slice the last entry
	// holds.
	Batch []int
}

// BatchAt returns the batch size the estimates assume on k GPUs, 0 when
// the job's batch is fixed or unknown.
func (e Estimates) BatchAt(k int) int {
	if k <= 0 || len(e.Batch) < 2 {
		return 0
	}
	return e.Batch[min(k, len(e.Batch)-1)]
}

// PendingRestart is what is left, at now, of the restart a job whose
// placement last changed at lastChange is paying: RestartSeconds after the
// change, nothing once that has passed (or with no change or no measure).
func (e Estimates) PendingRestart(lastChange, now time.Time) time.Duration {
	if lastChange.IsZero() || !(e.RestartSeconds > 0) {
		return 0
	}
	left := time.Duration(e.RestartSeconds*float64(time.Second)) - now.Sub(lastChange)
	return max(left, 0)
}

// SpeedupAt returns S(k).
func (e Estimates) SpeedupAt(k int) float64 {
	if k <= 0 {
		return 0
	}
	if len(e.Speedup) < 2 {
		return float64(k)
	}
	if k < len(e.Speedup) {
		return e.Speedup[k]
	}
	return e.Speedup[len(e.Speedup)-1]
}

// Job is one job as the scheduler sees it in a snapshot.
type Job struct {
	Spec  JobSpec
	State JobState
	Est   Estimates
}

// Before orders jobs by submit time, then name: the tie-break every
// algorithm falls back on, so no decision depends on map order.
func Before(a, b *Job) bool {
	if !a.Spec.SubmitTime.Equal(b.Spec.SubmitTime) {
		return a.Spec.SubmitTime.Before(b.Spec.SubmitTime)
	}
	return a.Spec.Name < b.Spec.Name
}

// QueueChange moves a job to another priority queue. Multi-level
// algorithms (Tiresias) emit them; the scheduler applies them, resetting
// the job's queue counters when it enters queue 0.
type QueueChange struct {
	Job   string
	Queue int
}
