package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Summary is the headline numbers of one run, as people compare
// algorithms. Times are simulated seconds except WallSeconds and the
// placement times (wall clock, so not deterministic).
type Summary struct {
	Algorithm string `json:"algorithm"`
	// Placer is the placement policy.
	Placer   string `json:"placer"`
	Workload string `json:"workload,omitempty"`
	// GPUs is the cluster's GPU count.
	GPUs int `json:"gpus"`
	// Cluster is the cluster's nodes by size, as Run.Cluster.
	Cluster string `json:"cluster,omitempty"`
	// Jobs is the number of jobs in the run, Completed those that finished.
	Jobs      int `json:"jobs"`
	Completed int `json:"completed"`
	// AvgJCT, P50JCT, P99JCT and MaxJCT are over completed jobs, JCT being
	// End - Submit. Percentiles use the nearest-rank method (see
	// Percentile).
	AvgJCT float64 `json:"avg_jct_s"`
	P50JCT float64 `json:"p50_jct_s"`
	P99JCT float64 `json:"p99_jct_s"`
	MaxJCT float64 `json:"max_jct_s"`
	// Makespan is the last completion minus the first submission, over
	// completed jobs; 0 if none completed.
	Makespan float64 `json:"makespan_s"`
	// AvgQueue is the mean of Start - Submit over jobs that started.
	AvgQueue float64 `json:"avg_queue_s"`
	// GPUUtilization is the GPU-seconds of all jobs over GPUs x Makespan,
	// clamped to [0, 1]; 0 when the makespan or the cluster is empty.
	GPUUtilization float64 `json:"gpu_utilization"`
	// Restarts and Migrations are totals over all jobs.
	Restarts          int     `json:"restarts"`
	Migrations        int     `json:"migrations"`
	AvgRestartsPerJob float64 `json:"avg_restarts_per_job"`
	// MigrationsPerJob is Migrations over Jobs.
	MigrationsPerJob float64 `json:"migrations_per_job"`
	// AvgSpreadJobs is the mean over cycles of the jobs that, once
	// placed, spanned more nodes than the fewest that could hold their
	// workers.
	AvgSpreadJobs float64 `json:"avg_spread_jobs"`
	// StrandedGPUHours is Run.StrandedGPUSeconds in hours: GPUs free but
	// too split for the jobs that waited (0 when every worker is one GPU).
	StrandedGPUHours float64 `json:"stranded_gpu_hours,omitempty"`
	// Cycles is the number of scheduling cycles.
	Cycles int `json:"cycles"`
	// PlaceMsAvg and PlaceMsMax are the mean and the maximum over cycles
	// of the wall-clock milliseconds the placer took.
	PlaceMsAvg float64 `json:"place_ms_avg"`
	PlaceMsMax float64 `json:"place_ms_max"`
	// WallSeconds is the real time the run took.
	WallSeconds float64 `json:"wall_s"`
	// Estimator is the run's estimator errors by application (goodput
	// estimates only).
	Estimator []EstimatorError `json:"estimator_errors,omitempty"`
	// Apps breaks the average JCT down by application, by name.
	Apps []AppShare `json:"apps,omitempty"`
	// Teams, in a run with teams, are each team's share of the GPUs and
	// finish-time fairness (TeamShare), by name.
	Teams []TeamShare `json:"teams,omitempty"`
	// FTFMean and FTFWorst are the finish-time fairness of every team's
	// completed jobs (TeamShare.FTFMean), with teams.
	FTFMean  float64 `json:"ftf_mean,omitempty"`
	FTFWorst float64 `json:"ftf_worst,omitempty"`
	// Reclaims counts the run's reclaims (Run.Reclaims), Unreclaimed
	// those the run ended in; ReclaimMax and ReclaimMean are their
	// longest and mean lengths in seconds (Reclaim.Seconds), and
	// ReclaimRunningMax and ReclaimRunningMean those until every job of
	// the team ran (Reclaim.Running), the restart after excluded.
	Reclaims           int     `json:"reclaims,omitempty"`
	Unreclaimed        int     `json:"unreclaimed,omitempty"`
	ReclaimMax         float64 `json:"reclaim_max_s,omitempty"`
	ReclaimMean        float64 `json:"reclaim_mean_s,omitempty"`
	ReclaimRunningMax  float64 `json:"reclaim_running_max_s,omitempty"`
	ReclaimRunningMean float64 `json:"reclaim_running_mean_s,omitempty"`
}

// AppShare is one application's part of a run's average JCT.
type AppShare struct {
	App string `json:"app"`
	// Completed counts the application's completed jobs.
	Completed int `json:"completed"`
	// AvgJCT is their average JCT.
	AvgJCT float64 `json:"avg_jct_s"`
	// Contribution is their JCTs summed over all completed jobs of the
	// run: the contributions of a run add up to its AvgJCT.
	Contribution float64 `json:"contribution_s"`
}

// Summarize computes the summary of a run. A nil run gives a zero Summary.
func Summarize(run *Run) Summary {
	if run == nil {
		return Summary{}
	}
	s := Summary{
		Algorithm:   run.Algorithm,
		Placer:      run.Placer,
		Workload:    run.Workload,
		GPUs:        run.GPUs,
		Cluster:     run.Cluster,
		Jobs:        len(run.Jobs),
		Cycles:      run.Cycles,
		PlaceMsMax:  milliseconds(run.PlaceMax),
		WallSeconds: run.WallSeconds,
		Estimator:   run.Estimator,
	}
	jcts := JCTs(run)
	s.Completed = len(jcts)
	var gpuSeconds, queue float64
	started := 0
	firstSubmit, lastEnd := math.Inf(1), math.Inf(-1)
	for _, j := range run.Jobs {
		s.Restarts += j.Restarts
		s.Migrations += j.Migrations
		gpuSeconds += j.GPUSeconds
		if j.Start >= 0 {
			started++
			queue += j.Start - j.Submit
		}
		if j.Done {
			firstSubmit = math.Min(firstSubmit, j.Submit)
			lastEnd = math.Max(lastEnd, j.End)
		}
	}
	if started > 0 {
		s.AvgQueue = queue / float64(started)
	}
	if s.Jobs > 0 {
		s.AvgRestartsPerJob = float64(s.Restarts) / float64(s.Jobs)
		s.MigrationsPerJob = float64(s.Migrations) / float64(s.Jobs)
	}
	if s.Cycles > 0 {
		s.AvgSpreadJobs = float64(run.SpreadJobCycles) / float64(s.Cycles)
		s.StrandedGPUHours = run.StrandedGPUSeconds / 3600
		s.PlaceMsAvg = milliseconds(run.PlaceTotal) / float64(s.Cycles)
	}
	if s.Completed > 0 {
		s.AvgJCT = mean(jcts)
		s.P50JCT = Percentile(jcts, 50)
		s.P99JCT = Percentile(jcts, 99)
		s.MaxJCT = jcts[len(jcts)-1]
		s.Makespan = math.Max(0, lastEnd-firstSubmit)
	}
	if s.Makespan > 0 && s.GPUs > 0 {
		s.GPUUtilization = min(1, max(0, gpuSeconds/(float64(s.GPUs)*s.Makespan)))
	}
	s.Apps = appShares(run, s.Completed)
	s.Teams = teamShares(run)
	s.fairness(run)
	return s
}

func appShares(run *Run, completed int) []AppShare {
	if completed == 0 {
		return nil
	}
	idx := map[string]int{}
	var out []AppShare
	for _, j := range run.Jobs {
		if !j.Done {
			continue
		}
		i, ok := idx[j.App]
		if !ok {
			i = len(out)
			idx[j.App] = i
			out = append(out, AppShare{App: j.App})
		}
		out[i].Completed++
		out[i].AvgJCT += j.End - j.Submit
	}
	for i := range out {
		out[i].Contribution = out[i].AvgJCT / float64(completed)
		out[i].AvgJCT /= float64(out[i].Completed)
	}
	slices.SortFunc(out, func(a, b AppShare) int { return strings.Compare(a.App, b.App) })
	return out
}

// pooled gathers the entries items picks from every workload's i-th
// summary, one entry per key in the order first seen: first makes it
// from the first entry of its key, and add folds every entry of the key
// (the first too) into it.
func pooled[T any](rows [][]Summary, i int, items func(Summary) []T, key func(T) string, first func(T) T, add func(*T, T)) []T {
	idx := map[string]int{}
	var out []T
	for _, row := range rows {
		for _, e := range items(row[i]) {
			k, ok := idx[key(e)]
			if !ok {
				k = len(out)
				idx[key(e)] = k
				out = append(out, first(e))
			}
			add(&out[k], e)
		}
	}
	return out
}

// meanApps averages application shares over workloads: completed jobs
// add up, the rest are means over the workloads (an application missing
// from a workload contributes nothing to it).
func meanApps(rows [][]Summary, i int) []AppShare {
	n := float64(len(rows))
	out := pooled(rows, i, func(s Summary) []AppShare { return s.Apps }, func(a AppShare) string { return a.App },
		func(a AppShare) AppShare { return AppShare{App: a.App} },
		func(o *AppShare, a AppShare) {
			o.Completed += a.Completed
			o.AvgJCT += a.AvgJCT * float64(a.Completed) // a sum until the end
			o.Contribution += a.Contribution / n
		})
	for k := range out {
		if out[k].Completed > 0 {
			out[k].AvgJCT /= float64(out[k].Completed)
		}
	}
	slices.SortFunc(out, func(a, b AppShare) int { return strings.Compare(a.App, b.App) })
	return out
}

// meanEstimator pools estimator errors over workloads, weighting each
// workload's means by its counts.
func meanEstimator(rows [][]Summary, i int) []EstimatorError {
	out := pooled(rows, i, func(s Summary) []EstimatorError { return s.Estimator }, func(e EstimatorError) string { return e.App },
		func(e EstimatorError) EstimatorError { return EstimatorError{App: e.App} },
		func(o *EstimatorError, e EstimatorError) {
			o.NewPlacementMeanErr += e.NewPlacementMeanErr * float64(e.NewPlacements)
			o.NewBatchMeanErr += e.NewBatchMeanErr * float64(e.NewBatches)
			o.NewPlacements += e.NewPlacements
			o.NewBatches += e.NewBatches
			o.NewPlacementMaxErr = max(o.NewPlacementMaxErr, e.NewPlacementMaxErr)
			o.NewBatchMaxErr = max(o.NewBatchMaxErr, e.NewBatchMaxErr)
		})
	for k := range out {
		if out[k].NewPlacements > 0 {
			out[k].NewPlacementMeanErr /= float64(out[k].NewPlacements)
		}
		if out[k].NewBatches > 0 {
			out[k].NewBatchMeanErr /= float64(out[k].NewBatches)
		}
	}
	slices.SortFunc(out, func(a, b EstimatorError) int { return strings.Compare(a.App, b.App) })
	return out
}

// MeanOverWorkloads averages rows[workload][i] over the workloads for
// each i, the way the Pollux artifact reports its means; every row holds
// the same runs (algorithm, placer) in the same order. Counts (jobs,
// restarts, cycles...) add up; maxima take the maximum; averages, per-job
// and per-cycle figures are means over workloads.
func MeanOverWorkloads(rows [][]Summary) []Summary {
	if len(rows) == 0 {
		return nil
	}
	out := make([]Summary, len(rows[0]))
	n := float64(len(rows))
	for i := range out {
		var m Summary
		for _, row := range rows {
			s := row[i]
			m.Algorithm = s.Algorithm
			m.Placer = s.Placer
			m.GPUs = s.GPUs
			m.Cluster = s.Cluster
			m.MaxJCT = max(m.MaxJCT, s.MaxJCT)
			m.AvgRestartsPerJob += s.AvgRestartsPerJob / n
			m.MigrationsPerJob += s.MigrationsPerJob / n
			m.AvgSpreadJobs += s.AvgSpreadJobs / n
			m.StrandedGPUHours += s.StrandedGPUHours / n
			m.Jobs += s.Jobs
			m.Completed += s.Completed
			m.AvgJCT += s.AvgJCT / n
			m.P50JCT += s.P50JCT / n
			m.P99JCT += s.P99JCT / n
			m.Makespan += s.Makespan / n
			m.AvgQueue += s.AvgQueue / n
			m.GPUUtilization += s.GPUUtilization / n
			m.Restarts += s.Restarts
			m.Migrations += s.Migrations
			m.Cycles += s.Cycles
			m.PlaceMsAvg += s.PlaceMsAvg / n
			m.PlaceMsMax = max(m.PlaceMsMax, s.PlaceMsMax)
			m.WallSeconds += s.WallSeconds
		}
		m.Workload = fmt.Sprintf("mean of %d", len(rows))
		m.Apps = meanApps(rows, i)
		m.Estimator = meanEstimator(rows, i)
		m.Teams = meanTeams(rows, i)
		meanFairness(&m, rows, i)
		out[i] = m
	}
	return out
}

// JCTs returns the job completion times (End - Submit) of the run's
// completed jobs, in ascending order.
func JCTs(run *Run) []float64 {
	var jcts []float64
	for _, j := range run.Jobs {
		if j.Done {
			jcts = append(jcts, j.End-j.Submit)
		}
	}
	slices.Sort(jcts)
	return jcts
}

// Percentile returns the p-th percentile (0 < p <= 100) of ascending
// values by the nearest-rank method: the smallest value such that at least
// p % of the values are at or below it, that is sorted[ceil(p/100*n)-1].
// It is always one of the values (no interpolation), so the p99 of 160 jobs
// is the 159th smallest. It returns 0 for no values.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
