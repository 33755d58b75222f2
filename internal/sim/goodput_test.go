package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

func topologyPlacer(t testing.TB) placement.Placer {
	t.Helper()
	p, err := placement.Builtin().New(placement.DefaultName, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAdaptiveBatchBeatsEveryFixedBatch replays the observation:
// no fixed-batch run of yolov3 finishes in under 14,130 s even alone on
// its best allocation, while Pollux's adaptive jobs did. A yolov3 job
// alone on 16 x 4 GPUs under Goodput finishes sooner with adaptive batches
// and online estimates only, and not with its workload's fixed batch.
func TestAdaptiveBatchBeatsEveryFixedBatch(t *testing.T) {
	dir := polluxDir(t)
	models := polluxModels(t, dir)
	job := workload.Job{Name: "yolov3-0", App: "yolov3", MinWorkers: 1, MaxWorkers: 4, Requested: 4, BatchSize: 64, WidenMax: true}
	jct := func(adaptive bool) (float64, *report.Run) {
		r := run(t, []workload.Job{job}, Options{
			Nodes: 16, GPUsPerNode: 4, Interval: 60 * time.Second, Models: models,
			Allocator: newAlloc(t, "Goodput"), Placer: topologyPlacer(t),
			Estimator: EstimatorGoodput, AdaptiveBatch: adaptive,
		})
		if !r.Jobs[0].Done {
			t.Fatalf("adaptive=%v: the job did not finish", adaptive)
		}
		return r.Jobs[0].End - r.Jobs[0].Submit, r
	}
	fixed, _ := jct(false)
	adaptive, r := jct(true)
	t.Logf("yolov3 alone: fixed batch %.0f s, adaptive %.0f s", fixed, adaptive)
	if fixed < 14130 {
		t.Errorf("fixed batch finished in %.0f s, under the 14,130 s bound", fixed)
	}
	if adaptive >= 14130 {
		t.Errorf("adaptive batch took %.0f s, want under 14,130 s", adaptive)
	}
	if len(r.Estimator) != 1 || r.Estimator[0].App != "yolov3" || r.Estimator[0].NewPlacements == 0 {
		t.Errorf("estimator errors %+v: want yolov3's new placements scored", r.Estimator)
	}
}

// TestAdaptiveBatchDeterministic runs the first 40 jobs of a Pollux
// workload twice with adaptive batches: every job finishes, and the two
// runs agree on every job and every GPU change.
func TestAdaptiveBatchDeterministic(t *testing.T) {
	dir := polluxDir(t)
	models := polluxModels(t, dir)
	jobs, err := workload.Read(filepath.Join(dir, "workloads", "workload-3.csv"), workload.FormatPollux, workload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jobs = jobs[:40]
	digest := func() string {
		r := run(t, jobs, Options{
			Nodes: 16, GPUsPerNode: 4, Interval: 60 * time.Second, Models: models,
			Allocator: newAlloc(t, "Goodput"), Placer: topologyPlacer(t), AdaptiveBatch: true,
		})
		var b strings.Builder
		for _, j := range r.Jobs {
			if !j.Done {
				t.Fatalf("job %s did not finish", j.Name)
			}
			fmt.Fprintf(&b, "%s %g %g %d %g\n", j.Name, j.Start, j.End, j.Restarts, j.GPUSeconds)
		}
		for _, c := range r.Changes {
			fmt.Fprintf(&b, "%g %s %d\n", c.Time, c.Job, c.GPUs)
		}
		return b.String()
	}
	if a, b := digest(), digest(); a != b {
		t.Error("two adaptive runs differ")
	}
}

func TestAdaptiveBatchNeedsProfiles(t *testing.T) {
	jobs := []workload.Job{{Name: "a", App: "resnet50", MinWorkers: 1, MaxWorkers: 2, Requested: 1, Duration: 600}}
	_, err := Run(context.Background(), jobs, Options{
		Nodes: 1, GPUsPerNode: 4, Models: parametricSet(t), Allocator: newAlloc(t, "Goodput"),
		Placer: topologyPlacer(t), AdaptiveBatch: true,
	})
	if err == nil || !strings.Contains(err.Error(), "measured profile") {
		t.Errorf("adaptive batches on a parametric model: %v, want an error asking for a measured profile", err)
	}
	_, err = Run(context.Background(), jobs, Options{
		Nodes: 1, GPUsPerNode: 4, Models: parametricSet(t), Allocator: newAlloc(t, "Goodput"),
		Placer: topologyPlacer(t), AdaptiveBatch: true, Estimator: EstimatorOracle,
	})
	if err == nil || !strings.Contains(err.Error(), "oracle") {
		t.Errorf("adaptive batches with the oracle: %v, want an error", err)
	}
}
