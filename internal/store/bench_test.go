package store_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/store/storetest"
)

// BenchmarkCreateJob measures concurrent submissions, as when many users
// submit at once: 32 goroutines per CPU, each creating distinct jobs with
// a 1 KiB manifest.
func BenchmarkCreateJob(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		benchCreate(b, func() (store.Store, error) { return store.Open(b.Context(), "", b.TempDir()) })
	})
	b.Run("mongo", func(b *testing.B) {
		uri := storetest.FerretDB(b)
		benchCreate(b, func() (store.Store, error) { return store.Open(b.Context(), uri, "") })
	})
}

func benchCreate(b *testing.B, open func() (store.Store, error)) {
	s, err := open()
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close(b.Context()) }()
	manifest := []byte(`{"kind":"MPIJob","spec":"` + strings.Repeat("x", 1000) + `"}`)
	submit := time.Now()
	var seq atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprint("job-", seq.Add(1))
			j := store.Job{
				Name: name, Kind: "MPIJob", Manifest: manifest,
				Spec: model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, SubmitTime: submit},
			}
			if err := s.CreateJob(b.Context(), j); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSaveProgress measures progress reports on the embedded store:
// 1,000 running jobs (1 KiB manifests), each report a 1 KiB progress state
// over the revision its writer last got, as the API does. A job is
// reported on by one goroutine at a time, so no report conflicts.
//
// db.Batch commits when 1,000 writes wait or 10 ms after the first, so
// the figure depends on how many reports are in flight: "32-per-cpu" has
// 32 goroutines per CPU (as BenchmarkCreateJob), "one-per-job" one per
// job, as when every job's report arrives at once.
func BenchmarkSaveProgress(b *testing.B) {
	b.Run("32-per-cpu", func(b *testing.B) { benchSaveProgress(b, 32) })
	b.Run("one-per-job", func(b *testing.B) {
		benchSaveProgress(b, max(1, progressJobs/runtime.GOMAXPROCS(0)))
	})
}

// progressJobs is BenchmarkSaveProgress's job count.
const progressJobs = 1000

func benchSaveProgress(b *testing.B, parallelism int) {
	const jobs = progressJobs
	s, err := store.Open(b.Context(), "", b.TempDir())
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close(b.Context()) }()
	manifest := []byte(`{"kind":"MPIJob","spec":"` + strings.Repeat("x", 1000) + `"}`)
	names := make([]string, jobs)
	var wg sync.WaitGroup
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d", i)
		j := store.Job{
			Name: names[i], Kind: "MPIJob", Manifest: manifest,
			Spec:   model.JobSpec{Name: names[i], GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, SubmitTime: time.Now()},
			Status: store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 2}},
		}
		wg.Go(func() { // concurrent creates share commits
			if err := s.CreateJob(b.Context(), j); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	progress := []byte(`{"generation":"r7f3-0-4","report":{"steps":1200},"pad":"` + strings.Repeat("p", 1000) + `"}`)
	var (
		locks [jobs]sync.Mutex
		revs  [jobs]int64
		seq   atomic.Int64
	)
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1) % jobs
			locks[i].Lock()
			rev, err := s.SaveProgress(b.Context(), names[i], progress, revs[i])
			revs[i] = rev
			locks[i].Unlock()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
