package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/estimate"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// TestEstimatesAgreeWithServerPath feeds one job's measurements — a
// cifar10 job of the Pollux profiles on five placements, from one GPU to
// eight over two nodes and back, at a batch size per placement — through
// the simulator's path (the engine's own flush and job description, as a
// replay makes them) and through the server's (progress reports ingested
// by package progress, read back by estimate.FromReports, as the service
// does), each into its own estimator, and asserts that after every
// measured interval both give the same estimates: the same speedup curve
// and batch per worker count, the same restart cost, and the same
// remaining time to the rounding of a report's whole sample count (a
// few parts per million here); and that the batch the server advises in
// its reply to the job's next report is the one the simulator's job
// chooses.
func TestEstimatesAgreeWithServerPath(t *testing.T) {
	models := polluxModels(t, polluxDir(t))
	const perNode, restart = 4, 30.0
	w := workload.Job{Name: "job", App: "cifar10", MinWorkers: 1, MaxWorkers: 16, Requested: 1}
	j, err := newSimJob(w, Options{Models: models, Estimator: EstimatorGoodput, AdaptiveBatch: true, GPUsPerNode: perNode}, oneSize(t, 4, perNode))
	if err != nil {
		t.Fatal(err)
	}
	prof := j.m.(*perfmodel.Profiled)
	init, maxBatch, minLocal, maxLocal := prof.BatchLimits()

	// The simulator's path.
	e := &engine{opts: Options{Nodes: 4, GPUsPerNode: perNode, Estimator: EstimatorGoodput}, cl: oneSize(t, 4, perNode),
		port: &replayPort{jobs: map[string]*simJob{w.Name: j}, restartCost: restart}}
	e.online = estimate.NewOnline(estimate.Options{StepModels: true})
	e.online.SetGPUsPerNode(perNode)
	e.est = e.online

	// The server's path.
	srv := estimate.NewOnline(estimate.Options{StepModels: true})
	srv.SetGPUsPerNode(perNode)
	spec := model.JobSpec{Name: w.Name, MaxWorkers: 16, Epochs: j.epochs}
	var st *progress.State
	now := time.Unix(1_800_000_000, 0).UTC()
	var steps int64
	report := func(gen string, workers, nodes, atomic, accum int, seconds float64) progress.Report {
		sqr, vr := prof.GradStats(j.batch, j.epoch)
		// The samples of the work done, counted in steps of the initial
		// batch, as the server's simulated cluster reports them.
		samples := int64(math.Round(j.progress * float64(init)))
		return progress.Report{Generation: gen, Workers: workers, Nodes: nodes, Steps: steps, Epoch: float64(j.epoch),
			TotalEpochs: float64(j.epochs), Samples: samples, GlobalBatchSize: int64(workers * atomic * (accum + 1)),
			LocalBatchSize: int64(atomic), Batch: progress.Batch{Init: int64(init), Max: int64(maxBatch), MinLocal: int64(minLocal), MaxLocal: int64(maxLocal),
				Accumulation: ptr(int64(accum))}, StepSeconds: seconds, GradSqNorm: &sqr, GradVariance: &vr}
	}
	ingest := func(r progress.Report, alloc progress.Allocation) {
		t.Helper()
		next, _, ferr := progress.Ingest(st, r, now, alloc)
		if ferr != nil {
			t.Fatalf("report %+v: %v", r, ferr)
		}
		st = &next
	}

	compared := 0
	for i, p := range []struct {
		place []int
		batch int
	}{
		{[]int{1}, init},
		{[]int{2}, 2 * init},
		{[]int{4}, 4 * init},
		{[]int{4, 4}, min(8*init, maxBatch)},
		{[]int{2}, 3 * init},
	} {
		gen := string(rune('a' + i))
		j.place, j.nodes, j.batch, j.rateOK, j.start = p.place, len(p.place), p.batch, false, 0
		if err := e.placed(j); err != nil {
			t.Fatal(err)
		}
		_, atomic, accum, seconds, err := prof.Iteration(j.place, j.batch)
		if err != nil {
			t.Fatal(err)
		}
		alloc := progress.Allocation{Workers: j.workers(), Nodes: j.nodes, ChangedAt: now}
		// The first report of a generation measures the restart; the
		// second is the warm-up; the next ones measure the step time.
		now = now.Add(time.Duration(restart) * time.Second)
		ingest(report(gen, j.workers(), j.nodes, atomic, accum, seconds), alloc)
		for n := range 4 {
			now = now.Add(30 * time.Second)
			steps += 100
			if n > 0 {
				// An interval the server measures: the simulated job ran it too.
				if err := j.measure(); err != nil {
					t.Fatal(err)
				}
			}
			j.epoch++
			j.progress = j.epochProgress(j.epoch)
			ingest(report(gen, j.workers(), j.nodes, atomic, accum, seconds), alloc)
			if n == 0 {
				continue
			}
			e.flush(j, false)
			simEst := e.est.Estimate(e.job(j))
			ej, m, ok := estimate.FromReports(st, spec, e.job(j).App, 16)
			if !ok {
				t.Fatalf("placement %v: the reports do not say the epochs left", p.place)
			}
			srv.SetJob(w.Name, ej.App, m)
			srvEst := srv.Estimate(ej)
			if !slices.Equal(simEst.Speedup, srvEst.Speedup) || !slices.Equal(simEst.Batch, srvEst.Batch) ||
				simEst.RestartSeconds != srvEst.RestartSeconds || math.Abs(simEst.RemainingSeconds/srvEst.RemainingSeconds-1) > 1e-5 {
				t.Fatalf("placement %v, interval %d:\nsimulator %+v\nserver    %+v", p.place, n, simEst, srvEst)
			}
			if len(simEst.Speedup) < 2 || simEst.RemainingSeconds <= 0 || simEst.RestartSeconds != restart {
				t.Fatalf("placement %v: estimates %+v say nothing", p.place, simEst)
			}
			// The batch the job trains next: the simulator's job chooses
			// it (rechoose), the server answers the job's next report with
			// it, from the model the scheduler fitted (store.JobStatus.Fit).
			choice, ok := e.online.Choose(w.Name, e.job(j).App, j.gradStats(), j.bounds, j.nodes, j.workers())
			fit, fitted := srv.Fit(w.Name, ej.App)
			if !ok || !fitted {
				t.Fatalf("placement %v: no model fitted (simulator %v, server %v)", p.place, ok, fitted)
			}
			withFit := alloc
			withFit.Fit = &fit
			_, out, ferr := progress.Ingest(st, report(gen, j.workers(), j.nodes, atomic, accum, seconds), now.Add(time.Second), withFit)
			if ferr != nil {
				t.Fatal(ferr)
			}
			want := progress.Advise(j.gradStats(), j.bounds, j.workers(), choice.Batch)
			if out.Advice == nil || *out.Advice != want {
				t.Fatalf("placement %v, interval %d: the server advises %+v, the simulator's job chooses %+v", p.place, n, out.Advice, want)
			}
			compared++
		}
	}
	if compared != 15 {
		t.Errorf("compared %d estimates, want 15", compared)
	}

	// A second job of the application, waiting: the simulator estimates it
	// as the server estimates a job that has not reported, from what the
	// first declared and measured.
	w2 := workload.Job{Name: "job2", App: "cifar10", MinWorkers: 1, MaxWorkers: 16, Requested: 1}
	j2, err := newSimJob(w2, Options{Models: models, Estimator: EstimatorGoodput, AdaptiveBatch: true, GPUsPerNode: perNode}, oneSize(t, 4, perNode))
	if err != nil {
		t.Fatal(err)
	}
	e.port.jobs[w2.Name] = j2
	simEst := e.est.Estimate(e.job(j2))
	srvEst := srv.Estimate(srv.Unreported(model.JobSpec{Name: w2.Name, MaxWorkers: 16, Epochs: j2.epochs}, "cifar10", 16))
	if !slices.Equal(simEst.Speedup, srvEst.Speedup) || !slices.Equal(simEst.Batch, srvEst.Batch) ||
		math.Abs(simEst.RemainingSeconds/srvEst.RemainingSeconds-1) > 1e-5 || len(simEst.Speedup) < 9 || len(simEst.Batch) != len(simEst.Speedup) {
		t.Errorf("a waiting job of the application:\nsimulator %+v\nserver    %+v", simEst, srvEst)
	}
}

func ptr[T any](v T) *T { return &v }
