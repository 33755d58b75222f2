package workload

import "github.com/vodascheduler/voda/internal/model"

// Job is one workload entry, whatever format it came from.
type Job struct {
	// Name is unique within the workload.
	Name string
	// Submit is the submission time in seconds from the trace start.
	Submit float64
	// App names the performance model (an application of the profiles
	// directory, or a parametric model name).
	App string
	// MinWorkers, MaxWorkers and Requested are the worker range and the
	// count non-elastic algorithms give the job, in workers.
	MinWorkers, MaxWorkers, Requested int
	// GPUsPerWorker is G, the GPUs each worker holds; 0 is read as 1.
	GPUsPerWorker int
	// Priority is 0 (highest) or more.
	Priority int
	// Epochs to train; 0 means the application's default.
	Epochs int
	// Duration is the job's run time in seconds at Requested GPUs, for
	// traces that give durations instead of epochs; 0 otherwise.
	Duration float64
	// BatchSize is the global batch size; 0 means the application's
	// default.
	BatchSize int
	// Team is the team (a namespace name, model.ValidTeam) the job
	// belongs to; "" is the one default team of a workload without teams.
	Team string
	// WidenMax lets the simulator raise MaxWorkers to what the
	// performance model supports for the batch size, for formats that give
	// no worker range (the Pollux artifact's).
	WidenMax bool
}

// MaxGPUsPerWorker bounds a workload's GPUs per worker, as a job manifest
// bounds them (jobspec.MaxGPUsPerWorker).
const MaxGPUsPerWorker = 64

// PerWorker returns G, the GPUs each of the job's workers holds: at least 1.
func (j Job) PerWorker() int { return max(j.GPUsPerWorker, 1) }

// gpusPerWorker reads the optional gpus_per_worker column: 1 when empty.
func gpusPerWorker(t *table) (int, error) {
	g, set, err := t.optInteger("gpus_per_worker", 1)
	if err != nil || !set {
		return 1, err
	}
	if g > MaxGPUsPerWorker {
		return 0, t.err("gpus_per_worker", "%d is above the maximum %d", g, MaxGPUsPerWorker)
	}
	return g, nil
}

// team reads the optional team column: "" when empty, else a namespace
// name (model.ValidTeam).
func team(t *table) (string, error) {
	name := t.str("team")
	if name == "" {
		return "", nil
	}
	if err := model.ValidTeam(name); err != nil {
		return "", t.err("team", "%v", err)
	}
	return name, nil
}
