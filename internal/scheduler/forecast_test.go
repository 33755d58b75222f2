package scheduler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/model"
)

// forecastJob is a job submitted at t0 holding gpus GPUs, with rem
// seconds of one-GPU work left (negative: unknown) and a linear speedup.
func forecastJob(name string, min, gpus int, rem float64) model.Job {
	return model.Job{
		Spec:  model.JobSpec{Name: name, MinWorkers: min, MaxWorkers: 64, RequestedWorkers: min, SubmitTime: t0},
		State: model.JobState{GPUs: gpus},
		Est:   model.Estimates{RemainingSeconds: rem},
	}
}

func TestForecasts(t *testing.T) {
	job := forecastJob
	snap := &model.Snapshot{
		Now:   t0,
		Nodes: []model.Node{{Name: "n0", GPUs: 4}, {Name: "n1", GPUs: 4}},
		Jobs: []model.Job{
			job("run-a", 1, 4, 400), // linear speedup: ends in 100 s
			job("run-b", 1, 3, -1),  // unknown: never releases
			job("wait-1", 1, 0, 100),
			job("wait-2", 2, 0, 100),
			job("wait-3", 4, 0, 100),
		},
	}
	// The allocator serves wait-2 before wait-1.
	got := Forecasts(snap, []string{"run-a", "run-b", "wait-2", "wait-1", "wait-3"})
	want := map[string]Forecast{
		"wait-2": {Position: 1, Start: t0.Add(100 * time.Second)}, // 1 free, needs 2
		"wait-1": {Position: 2, Start: t0.Add(100 * time.Second)}, // 3 needed, 5 free after run-a
		"wait-3": {Position: 3},                                   // 7 needed, only 5 ever free
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Forecasts (-want,+got):\n%s", diff)
	}

	// With room to spare, the first waiting job is expected now.
	snap.Jobs[1].State.GPUs = 0
	got = Forecasts(snap, nil)
	if f := got["run-b"]; f.Position != 1 || !f.Start.Equal(t0) {
		t.Errorf("run-b forecast = %+v, want position 1 starting now", f)
	}
}

// A running job that is paying its measured restart releases its GPUs
// that much later: what is left of the restart comes before its work.
func TestForecastsAfterRestart(t *testing.T) {
	t0 := time.Unix(1000, 0).UTC()
	for _, c := range []struct {
		name       string
		restart    float64
		changedAgo time.Duration
		start      time.Duration
	}{
		{"no restart measured", 0, 10 * time.Second, 100 * time.Second},
		{"restart under way", 30, 10 * time.Second, 120 * time.Second},
		{"restart over", 30, time.Minute, 100 * time.Second},
		{"never placed", 30, 0, 100 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := model.Job{
				Spec:  model.JobSpec{Name: "run", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 4, SubmitTime: t0},
				State: model.JobState{GPUs: 4},
				Est:   model.Estimates{RemainingSeconds: 400, RestartSeconds: c.restart},
			}
			if c.changedAgo > 0 {
				run.State.LastChange = t0.Add(-c.changedAgo)
			}
			wait := model.Job{Spec: model.JobSpec{Name: "wait", MinWorkers: 1, MaxWorkers: 1, RequestedWorkers: 1, SubmitTime: t0},
				Est: model.Estimates{RemainingSeconds: 100}}
			snap := &model.Snapshot{Now: t0, Nodes: []model.Node{{Name: "n0", GPUs: 4}}, Jobs: []model.Job{run, wait}}
			got := Forecasts(snap, nil)["wait"]
			if want := t0.Add(c.start); !got.Start.Equal(want) {
				t.Errorf("wait starts at %v, want %v", got.Start.Sub(t0), c.start)
			}
		})
	}
}

// A job that cannot start, or whose start cannot be estimated, does not
// hide the forecasts of the jobs behind it (a 40-GPU job first in line on
// a 32-GPU cluster hid every other waiting job's start).
func TestForecastsSkipJobsThatCannotBeForecast(t *testing.T) {
	job := forecastJob
	nodes := []model.Node{{Name: "n0", GPUs: 8}, {Name: "n1", GPUs: 8}, {Name: "n2", GPUs: 8}, {Name: "n3", GPUs: 8}}
	tests := []struct {
		name  string
		jobs  []model.Job
		order []string
		want  map[string]Forecast
	}{{
		name: "a job larger than the cluster first in line",
		jobs: []model.Job{
			job("run", 1, 32, 32*600), // ends in 600 s
			job("huge", 40, 0, 100),
			job("small", 4, 0, 100),
			job("next", 30, 0, 100),
		},
		order: []string{"run", "huge", "small", "next"},
		want: map[string]Forecast{
			"huge":  {Position: 1},
			"small": {Position: 2, Start: t0.Add(600 * time.Second)},
			"next":  {Position: 3}, // 34 needed behind small
		},
	}, {
		name: "a job that needs the GPUs of a job not yet measured",
		jobs: []model.Job{
			job("new", 1, 24, -1),    // just started: no estimate yet
			job("known", 1, 8, 8*60), // ends in 60 s
			job("wide", 16, 0, 100),  // needs new's GPUs: unknown
			job("narrow", 8, 0, 100), // fits in known's GPUs
		},
		order: []string{"new", "known", "wide", "narrow"},
		want: map[string]Forecast{
			"wide":   {Position: 1},
			"narrow": {Position: 2, Start: t0.Add(60 * time.Second)},
		},
	}, {
		name: "free GPUs now",
		jobs: []model.Job{
			job("run", 1, 16, 16*60),
			job("a", 8, 0, 100),
			job("b", 8, 0, 100),
			job("c", 8, 0, 100),
		},
		want: map[string]Forecast{
			"a": {Position: 1, Start: t0},
			"b": {Position: 2, Start: t0},
			"c": {Position: 3, Start: t0.Add(60 * time.Second)},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &model.Snapshot{Now: t0, Nodes: nodes, Jobs: tt.jobs}
			if diff := cmp.Diff(tt.want, Forecasts(snap, tt.order)); diff != "" {
				t.Errorf("Forecasts (-want,+got):\n%s", diff)
			}
		})
	}
}
