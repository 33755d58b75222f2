package service

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/estimate"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/store"
)

// storeProgress writes a job's progress state as the API's ingester
// does.
func (h *harness) storeProgress(name string, s progress.State) {
	h.t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		h.t.Fatal(err)
	}
	j := h.get(name)
	if _, err := h.st.SaveProgress(context.Background(), name, data, j.ProgressRevision); err != nil {
		h.t.Fatal(err)
	}
}

// TestReportsDriveEstimates: a job's stored reports give it its progress
// and its remaining time (epochs left over the measured one-GPU rate);
// when it finishes, what it measured becomes its application's history,
// which a restarted scheduler loads.
func TestReportsDriveEstimates(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.run()
	h.create("a", 2, 2)
	h.notify("a")
	h.waitStatus("a", model.StatusRunning)

	// 2 workers did 1 epoch in 100 s: with the default serial fraction
	// 0.05, the one-GPU rate is 0.01 * 1.05 / 2 epochs/s.
	var m collector.Measurements
	m.Add(collector.Observation{Workers: 2, Nodes: 1, Seconds: 100, Work: 1})
	h.storeProgress("a", progress.State{
		Latest:   progress.Report{Generation: "g", Workers: 2, Nodes: 1, Steps: 400, Epoch: 4, TotalEpochs: 10},
		At:       t0,
		Measured: m,
	})
	h.notify("a")
	rate1 := 0.01 * 1.05 / 2
	want := 6 / rate1
	waitFor(t, "the estimate from the reports", func() bool {
		var est model.Estimates
		h.do(func() {
			h.svc.estimate()
			j, _ := h.svc.core.Job("a")
			est = j.Est
		})
		return est.RemainingSeconds > 0 && abs(est.RemainingSeconds-want) < 1e-6*want
	})
	h.do(func() { h.svc.persist(context.Background(), h.clk.Now(), nil) })
	if p := h.get("a").Status.Progress; p != 0.4 {
		t.Errorf("stored progress %v, want 0.4 (4 of 10 epochs)", p)
	}
	// The job's gauges: 0.4 done; on 2 workers (speedup 2/1.05) the time
	// left; the speed measured there, 1 epoch in 100 s.
	if got := testutil.ToFloat64(h.m.JobProgress.WithLabelValues(gpuType, h.defaultNamespace, "a")); got != 0.4 {
		t.Errorf("voda_job_progress %v, want 0.4", got)
	}
	if got, want := testutil.ToFloat64(h.m.JobRemainingSeconds.WithLabelValues(gpuType, h.defaultNamespace, "a")), want/(2/1.05); abs(got-want) > 1e-6*want {
		t.Errorf("voda_job_remaining_seconds %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(h.m.JobThroughput.WithLabelValues(gpuType, h.defaultNamespace, "a")); abs(got-36) > 1e-9 {
		t.Errorf("voda_job_throughput_epochs_per_hour %v, want 36", got)
	}

	h.fake.finish("a", model.StatusCompleted)
	h.waitStatus("a", model.StatusCompleted)
	waitFor(t, "the application's history", func() bool {
		hist, err := h.st.ListHistories(context.Background(), gpuType)
		return err == nil && len(hist[estimate.AppKey(h.defaultNamespace, "a", 1)]) > 0
	})
	if n := testutil.CollectAndCount(h.m.JobProgress); n != 0 {
		t.Errorf("%d voda_job_progress series after the job finished, want none", n)
	}

	// A new scheduler on the same store starts from the history: a new
	// job of the application, never measured, gets its rate.
	h2 := h.restart(newFakeBackend(1, 4))
	var d collector.Detail
	h2.do(func() { d = h2.svc.learn.est.Detail("new", estimate.AppKey(h.defaultNamespace, "a", 1)) })
	if d.Source != collector.SourceApplication || abs(d.Rate1-rate1) > 1e-12 {
		t.Errorf("a new job of the application: %+v, want the application's rate %v", d, rate1)
	}
}

// The store keeps at most MaxHistories applications' histories per GPU
// type: those kept go on being updated, and a new application's beyond
// the bound is not kept (a restarted scheduler counts those it lists).
func TestHistoriesBounded(t *testing.T) {
	ctx := context.Background()
	encode := func(seconds float64) []byte {
		var m collector.Measurements
		m.Add(collector.Observation{Workers: 1, Nodes: 1, Seconds: seconds, Work: 1})
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	stored, fresh := encode(100), encode(200)
	cases := []struct {
		name   string
		max    int
		stored []string // histories in the store before the scheduler starts
		saved  []string // applications whose jobs then finish, in order
		want   map[string][]byte
		// forgotten are applications the collector no longer knows after.
		forgotten []string
	}{
		{name: "room left", max: 3, stored: []string{"x", "y"}, saved: []string{"z", "x"},
			want: map[string][]byte{"x": fresh, "y": stored, "z": fresh}},
		{name: "full: a new one is not kept, a kept one is updated", max: 2, stored: []string{"x", "y"}, saved: []string{"z", "x"},
			want: map[string][]byte{"x": fresh, "y": stored}, forgotten: []string{"z"}},
		{name: "filled by this scheduler", max: 2, stored: []string{"x"}, saved: []string{"y", "z", "y"},
			want: map[string][]byte{"x": stored, "y": fresh}, forgotten: []string{"z"}},
		{name: "the default bound", stored: []string{"x"}, saved: []string{"z"},
			want: map[string][]byte{"x": stored, "z": fresh}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 1, 4)
			h.maxHistories = c.max
			for _, app := range c.stored {
				if err := h.st.SaveHistory(ctx, gpuType, app, stored); err != nil {
					t.Fatal(err)
				}
			}
			h.run()
			var m collector.Measurements
			if err := json.Unmarshal(fresh, &m); err != nil {
				t.Fatal(err)
			}
			h.do(func() {
				for _, app := range c.saved {
					h.svc.learn.est.SetApp(app, estimate.History{Measurements: m})
					h.svc.learn.save(ctx, app)
				}
			})
			got, err := h.st.ListHistories(ctx, gpuType)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("histories (-want,+got):\n%s", diff)
			}
			h.do(func() {
				for app := range c.want {
					if m := h.svc.learn.est.App(app); len(m.Placements) == 0 {
						t.Errorf("the collector forgot kept application %s", app)
					}
				}
				for _, app := range c.forgotten {
					if m := h.svc.learn.est.App(app); len(m.Placements) != 0 {
						t.Errorf("the collector still holds application %s, whose history is not kept: %+v", app, m)
					}
				}
			})
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestApplication(t *testing.T) {
	for _, c := range []struct {
		job  store.Job
		want string
	}{
		{store.Job{Name: "bert-finetune-20261123-101500", Model: "bert", Application: "bert-large"}, "bert-large"},
		{store.Job{Name: "bert-finetune-20261123-101500", Application: "bert-large"}, "bert-large"},
		{store.Job{Name: "bert-finetune-20261123-101500", Model: "bert"}, "bert"},
		{store.Job{Name: "bert-finetune-20261123-101500"}, "bert-finetune"},
		{store.Job{Name: "bert-finetune-20261123-101500-12"}, "bert-finetune"},
		{store.Job{Name: "plain"}, "plain"},
		{store.Job{Name: "-20261123-101500"}, "-20261123-101500"},
	} {
		if got := application(c.job); got != c.want {
			t.Errorf("application(%q) = %q, want %q", c.job.Name, got, c.want)
		}
	}
}
