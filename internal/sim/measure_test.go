package sim

import (
	"testing"

	"github.com/vodascheduler/voda/internal/sim/workload"
)

// A job's configuration is measured at the instants the server measures
// a simulated job's reports: on the ReportEvery grid, from the second
// instant after its restart ends (the report at the restart's end and the
// warm-up after it are not measured); a batch run between two instants is
// not measured.
func TestMeasuredAtReportInstants(t *testing.T) {
	for _, c := range []struct{ now, restart, want float64 }{
		{0, 30, 50},  // reports at 30 (restart's end), 40 (warm-up), 50
		{3, 30, 50},  // 33, 40, 50
		{10, 30, 60}, // 40 is the restart's end and a grid instant
		{0, 0, 20},
	} {
		if got := firstMeasured(c.now, c.restart); got != c.want {
			t.Errorf("firstMeasured(%v, %v) = %v, want %v", c.now, c.restart, got, c.want)
		}
	}

	models := polluxModels(t, polluxDir(t))
	w := workload.Job{Name: "job", App: "cifar10", MinWorkers: 1, MaxWorkers: 4, Requested: 1}
	j, err := newSimJob(w, Options{Models: models, Estimator: EstimatorGoodput, AdaptiveBatch: true, GPUsPerNode: 4}, oneSize(t, 1, 4))
	if err != nil {
		t.Fatal(err)
	}
	j.place, j.nodes, j.measureFrom = []int{2}, 1, 50
	for _, c := range []struct {
		from, to float64
		measured bool
	}{
		{30, 49.9, false}, // before the first instant measured
		{40, 50, false},   // up to it, not including it
		{50, 51, true},    // at it
		{51, 59, false},   // between two instants
		{55, 65, true},    // 60
		{60.5, 70, false}, // 70 is the next span's
	} {
		j.pending = j.pending[:0]
		if err := j.sample(c.from, c.to); err != nil {
			t.Fatal(err)
		}
		if got := len(j.pending) > 0; got != c.measured {
			t.Errorf("span [%v, %v): measured %v, want %v", c.from, c.to, got, c.measured)
		}
	}
}
