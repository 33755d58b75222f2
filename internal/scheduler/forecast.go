package scheduler

import (
	"sort"
	"time"

	"github.com/vodascheduler/voda/internal/model"
)

// Forecast is a waiting job's place in line and its expected start.
type Forecast struct {
	// Position is 1 for the waiting job the algorithm serves first.
	Position int
	// Start is when the job is expected to get GPUs; zero when unknown.
	Start time.Time
}

// Forecasts estimates, for every waiting job of snap (holding no GPU), its
// position among waiting jobs in the allocator's order and when it may
// start. The estimate is deliberately simple: running jobs release their
// GPUs when their estimated remaining time at their current speedup runs
// out, and waiting jobs start in order, each at the first release after
// which the GPUs free cover its minimum plus the minimums of the jobs
// ahead of it that have an estimate. A running job with an unknown
// remaining time releases nothing. A job whose start cannot be estimated
// that way (its minimum exceeds the GPU type's GPUs, or it needs GPUs that
// only jobs of unknown remaining time hold) gets no start and does not
// hold back the jobs behind it: their forecasts are made as if it were not
// in line. Elastic algorithms may start jobs sooner by shrinking others;
// non-elastic ones may backfill. No start is before snap.Now.
func Forecasts(snap *model.Snapshot, order []string) map[string]Forecast {
	type release struct {
		at   time.Time
		gpus int
		name string
	}
	byName := make(map[string]*model.Job, len(snap.Jobs))
	free := snap.TotalGPUs()
	var releases []release
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		byName[j.Spec.Name] = j
		if j.State.GPUs == 0 {
			continue
		}
		free -= j.State.GPUs
		if rem := j.Est.RemainingSeconds; rem >= 0 {
			secs := rem / max(j.Est.SpeedupAt(j.State.GPUs), 1e-9)
			at := snap.Now.Add(time.Duration(secs*float64(time.Second)) + j.Est.PendingRestart(j.State.LastChange, snap.Now))
			releases = append(releases, release{at, j.State.GPUs, j.Spec.Name})
		}
	}
	sort.Slice(releases, func(a, b int) bool {
		if !releases[a].at.Equal(releases[b].at) {
			return releases[a].at.Before(releases[b].at)
		}
		return releases[a].name < releases[b].name
	})
	// freeAfter[k] is the GPUs free once the first k releases happened;
	// it never decreases, so the first k that covers a need is found by
	// binary search.
	freeAfter := make([]int, len(releases)+1)
	freeAfter[0] = free
	for k, r := range releases {
		freeAfter[k+1] = freeAfter[k] + r.gpus
	}
	out := map[string]Forecast{}
	need := 0
	for _, name := range completeOrder(snap, order) {
		j, ok := byName[name]
		if !ok || j.State.GPUs > 0 {
			continue
		}
		f := Forecast{Position: len(out) + 1}
		want := need + j.Spec.MinWorkers*j.Spec.PerWorker()
		if k := sort.SearchInts(freeAfter, want); k < len(freeAfter) {
			need = want
			f.Start = snap.Now
			if k > 0 && releases[k-1].at.After(snap.Now) {
				f.Start = releases[k-1].at
			}
		}
		out[name] = f
	}
	return out
}
