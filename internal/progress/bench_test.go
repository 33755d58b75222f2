package progress_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/store"
)

type fixedClock struct{ t atomic.Int64 }

func (c *fixedClock) Now() time.Time { return time.Unix(0, c.t.Add(int64(time.Second))) }

// BenchmarkIngest is the store's side of a progress report on the
// embedded store: read the job, apply the report, write the state back,
// from many jobs at once (the route adds decoding and the answer).
func BenchmarkIngest(b *testing.B) {
	benchIngest(b, func(gen string, n int64) progress.Report {
		return progress.Report{Generation: gen, Workers: 2, Nodes: 1, Steps: 100 * n, Epoch: float64(n) / 10, TotalEpochs: 100}
	})
}

// BenchmarkIngestAdaptive is BenchmarkIngest for jobs that declared an
// adaptive batch: at steady state each report adds to a configuration
// already measured (no fit) and is answered with the best batch for the
// allocation.
func BenchmarkIngestAdaptive(b *testing.B) {
	sq, v := 1.0, 20.0
	benchIngest(b, func(gen string, n int64) progress.Report {
		return progress.Report{Generation: gen, Workers: 2, Nodes: 1, Steps: 100 * n, Epoch: float64(n) / 10, TotalEpochs: 100,
			GlobalBatchSize: 256, LocalBatchSize: 128, StepSeconds: 0.3, GradSqNorm: &sq, GradVariance: &v,
			Batch: progress.Batch{Init: 256, Max: 8192, MaxLocal: 512}}
	})
}

func benchIngest(b *testing.B, report func(gen string, n int64) progress.Report) {
	ctx := context.Background()
	const jobs = 1000
	st := storeWithJobs(b, jobs)
	in := &progress.Ingester{Store: st, Clock: &fixedClock{}}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(jobs / 2) // with GOMAXPROCS 2: a report in flight per job
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(1) - 1
		name := jobName(int(i % jobs))
		var n int64
		for pb.Next() {
			n++
			if _, err := in.Ingest(ctx, name, report(fmt.Sprint("g", i), n)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// jobName is the name of storeWithJobs's job i.
func jobName(i int) string { return fmt.Sprintf("job-%04d", i) }

// storeWithJobs is an embedded store, closed after the test, holding jobs
// running jobs on two workers, named by jobName.
func storeWithJobs(tb testing.TB, jobs int) store.Store {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "", tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close(ctx) })
	manifest := []byte(`{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"x","namespace":"default"},"spec":{"mpiReplicaSpecs":{"Launcher":{"template":{"spec":{"containers":[{"name":"launcher","image":"horovod/horovod:0.28.1","env":[{"name":"MIN_NUM_PROC","value":"1"},{"name":"MAX_NUM_PROC","value":"4"},{"name":"EPOCHS","value":"100"}]}]}}},"Worker":{"replicas":2,"template":{"spec":{"nodeSelector":{"vodascheduler/accelerator":"v100"},"containers":[{"name":"worker","image":"horovod/horovod:0.28.1"}]}}}}}}`)
	for i := range jobs {
		name := jobName(i)
		j := store.Job{Name: name, Kind: "MPIJob", Namespace: "default", Manifest: manifest,
			Spec:   model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 100},
			Status: store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 2}}}
		if err := st.CreateJob(ctx, j); err != nil {
			tb.Fatal(err)
		}
	}
	return st
}

// BenchmarkIngestState is the decision alone (no store) for a job at
// steady state: a fixed batch, and an adaptive one whose configuration is
// already measured (no fit; the reply's best batch is chosen).
func BenchmarkIngestState(b *testing.B) {
	sq, v := 1.0, 20.0
	for _, c := range []struct {
		name  string
		batch progress.Batch
	}{{"fixed", progress.Batch{}}, {"adaptive", progress.Batch{Init: 256, Max: 8192, MaxLocal: 512}}} {
		b.Run(c.name, func(b *testing.B) {
			alloc := progress.Allocation{Workers: 2, Nodes: 1}
			t0 := time.Unix(1e9, 0)
			rep := func(n int64) progress.Report {
				return progress.Report{Generation: "g", Workers: 2, Nodes: 1, Steps: 100 * n, Epoch: float64(n) / 10, TotalEpochs: 100,
					GlobalBatchSize: 256, LocalBatchSize: 128, StepSeconds: 0.3, GradSqNorm: &sq, GradVariance: &v, Batch: c.batch}
			}
			var s progress.State
			for n := range int64(3) {
				s, _, _ = progress.Ingest(&s, rep(n), t0.Add(time.Duration(n)*time.Second), alloc)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				n := int64(i) + 3
				s, _, _ = progress.Ingest(&s, rep(n), t0.Add(time.Duration(n)*time.Second), alloc)
			}
		})
	}
}
