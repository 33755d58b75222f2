package report

import "time"

// Run is the record of one simulation run, produced by the simulator.
type Run struct {
	Algorithm string
	// Placer names the placement policy.
	Placer string
	// Workload names the workload file or generator.
	Workload string
	// GPUs is the cluster's GPU count.
	GPUs int
	// Cluster is the cluster's shape as 'voda simulate --cluster' takes
	// it: groups of NODESxGPUS, comma-separated ("16x4", "4x8,8x4").
	Cluster string
	Jobs    []JobResult
	// Changes lists every change of a job's GPU count, in time order.
	Changes []Change
	// EndTime is the simulated time when the run stopped, in seconds.
	EndTime float64
	// WallSeconds is the real time the run took.
	WallSeconds float64
	// Cycles is the number of scheduling cycles the run took.
	Cycles int
	// SpreadJobCycles is the sum over cycles of the jobs that, once
	// placed, spanned more nodes than the fewest that could hold their
	// workers (scheduler.CycleReport.Spread).
	SpreadJobCycles int
	// StrandedGPUSeconds is the GPU-time left free on nodes where no
	// waiting job could run a worker of its G GPUs, while jobs waited: the
	// cost of fragmentation (scheduler.CycleReport.Stranded, held from
	// one cycle to the next).
	StrandedGPUSeconds float64
	// PlaceTotal and PlaceMax are the sum and the maximum over cycles of
	// the wall-clock time the placer took. They are not deterministic.
	PlaceTotal time.Duration
	PlaceMax   time.Duration
	// Estimator holds, with goodput estimates, how well each application's
	// step times were predicted before a job first ran a configuration.
	Estimator []EstimatorError
	// Teams holds, in a run with teams, each team's share of the GPUs
	// over time, by team name; nil without teams.
	Teams []TeamRecord
	// Reclaims are the run's reclaims, in the order they began: each
	// time a team held fewer GPUs than min(demand, guarantee), with a job
	// waiting, while another team held more than its guarantee.
	Reclaims []Reclaim
}

// EstimatorError is the relative error |predicted − measured| / measured
// of the step time of configurations a job had not run yet, predicted by
// the model fitted from what it (and its application) had run: placements
// (nodes, workers) it had never been on, and new batch sizes on one it
// had.
type EstimatorError struct {
	App                 string  `json:"app"`
	NewPlacements       int     `json:"new_placements"`
	NewPlacementMeanErr float64 `json:"new_placement_mean_error"`
	NewPlacementMaxErr  float64 `json:"new_placement_max_error"`
	NewBatches          int     `json:"new_batches"`
	NewBatchMeanErr     float64 `json:"new_batch_mean_error"`
	NewBatchMaxErr      float64 `json:"new_batch_max_error"`
}

// JobResult is one job's outcome.
type JobResult struct {
	Name string
	App  string
	// Submit, Start and End are simulated times in seconds; Start is the
	// first time the job got GPUs and End its completion. Done is false for
	// jobs that did not finish (Start/End then hold -1 where unknown).
	Submit, Start, End float64
	Done               bool
	MinWorkers         int
	MaxWorkers         int
	Requested          int
	// Restarts counts re-placements after the first start.
	Restarts int
	// Migrations counts workers moved between nodes while the job's count
	// did not change, or that had to move on a resize.
	Migrations int
	// GPUSeconds is the attained service.
	GPUSeconds float64
	// Team is the job's team ("" without teams).
	Team string
	// AloneJCT, in a run with teams, is the job's completion time alone
	// on its 1/N of the cluster, for its finish-time fairness (see
	// TeamShare); 0 without teams.
	AloneJCT float64
}

// Change is a job's GPU count changing at a simulated time.
type Change struct {
	Time float64
	Job  string
	GPUs int
}
