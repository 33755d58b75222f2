package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

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

// The benchmarks below show that the cost of the reads a production store
// makes all the time does not grow with the finished jobs it keeps:
// ListJobs(Live) (every scheduler's resync and the API's event stream), a
// page of ListJobs, ListFinished and DeleteFinished (retention). One file
// grows from 1,000 live and 1,000 finished jobs to 100,000 finished, so
// the finished sizes share their setup; run with -benchtime=100x or so, as
// setting up 100,000 jobs takes a minute or more:
//
//	go test -run '^$' -bench 'BenchmarkScale' -benchtime=100x ./internal/store/

// scaleLive is the live jobs of every size.
const scaleLive = 1000

// scaleJob is a job as the API stores it (a 1 KiB manifest), live or
// finished (at finish).
func scaleJob(name string, submit time.Time, finish time.Time) store.Job {
	j := store.Job{
		Name: name, Kind: "MPIJob", Namespace: "team-a", Manifest: scaleManifest,
		Spec:   model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, SubmitTime: submit},
		Status: store.JobStatus{State: model.JobState{Status: model.StatusWaiting}, Updated: submit},
	}
	if !finish.IsZero() {
		j.Status.State = model.JobState{Status: model.StatusCompleted, FirstStart: submit, RunSeconds: 3600, AttainedService: 7200}
		j.Status.FinishTime, j.Status.Updated = finish, finish
		j.Status.Allocations = []store.Allocation{{At: submit, Placement: model.JobPlacement{{Node: "node-a", Workers: 2}}}, {At: finish}}
	}
	return j
}

var scaleManifest = []byte(`{"kind":"MPIJob","metadata":{"namespace":"team-a"},"spec":"` + strings.Repeat("x", 1000) + `"}`)

// scaleStore fills a store with jobs: createJobs creates jobs [from, to)
// of the finished ones (submitted in name order, finished in it too),
// 256 at a time so they share commits.
type scaleStore struct {
	s    store.Store
	base time.Time
	n    int // finished jobs created
}

func (c *scaleStore) createFinished(b *testing.B, to int) {
	b.Helper()
	c.create(b, c.n, to, func(i int) store.Job {
		submit := c.base.Add(time.Duration(i) * time.Second)
		return scaleJob(fmt.Sprintf("done-%06d", i), submit, submit.Add(time.Hour))
	})
	c.n = to
}

func (c *scaleStore) create(b *testing.B, from, to int, job func(i int) store.Job) {
	b.Helper()
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	for i := from; i < to; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := c.s.CreateJob(context.Background(), job(i)); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// newScaleStore opens a store with the live jobs, submitted after every
// finished job will be.
func newScaleStore(b *testing.B, s store.Store) *scaleStore {
	c := &scaleStore{s: s, base: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	c.create(b, 0, scaleLive, func(i int) store.Job {
		return scaleJob(fmt.Sprintf("live-%04d", i), c.base.Add(400*24*time.Hour+time.Duration(i)*time.Second), time.Time{})
	})
	return c
}

// benchReads runs the read benchmarks on c at its current size.
func benchReads(b *testing.B, c *scaleStore) {
	b.Run("ListJobs-live", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			jobs, err := c.s.ListJobs(b.Context(), store.ListOptions{GPUType: "v100", Live: true})
			if err != nil || len(jobs) != scaleLive {
				b.Fatalf("ListJobs = %d jobs, %v", len(jobs), err)
			}
		}
	})
	b.Run("ListJobs-first-page-50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			jobs, err := c.s.ListJobs(b.Context(), store.ListOptions{Limit: 50})
			if err != nil || len(jobs) != 50 {
				b.Fatalf("ListJobs = %d jobs, %v", len(jobs), err)
			}
		}
	})
	b.Run("ListJobs-middle-page-50", func(b *testing.B) {
		mid := store.Position{SubmitTime: c.base.Add(time.Duration(c.n/2) * time.Second), Name: fmt.Sprintf("done-%06d", c.n/2)}
		b.ReportAllocs()
		for b.Loop() {
			jobs, err := c.s.ListJobs(b.Context(), store.ListOptions{Limit: 50, After: mid})
			if err != nil || len(jobs) != 50 {
				b.Fatalf("ListJobs = %d jobs, %v", len(jobs), err)
			}
		}
	})
	b.Run("CountJobs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if l, f, err := c.s.CountJobs(b.Context()); err != nil || l != scaleLive || f != c.n {
				b.Fatalf("CountJobs = %d, %d, %v", l, f, err)
			}
		}
	})
}

// BenchmarkScaleBolt runs the reads on the embedded store at 1,000 live
// jobs and 1k, 10k and 100k finished ones, then retention at 100k.
func BenchmarkScaleBolt(b *testing.B) {
	dir := b.TempDir()
	s, err := store.Open(b.Context(), "", dir)
	if err != nil {
		b.Fatal(err)
	}
	c := newScaleStore(b, s)
	defer func() { _ = c.s.Close(context.Background()) }()
	for _, n := range []int{1000, 10000, 100000} {
		c.createFinished(b, n)
		b.Run(fmt.Sprintf("finished=%d", n), func(b *testing.B) { benchReads(b, c) })
	}
	b.Run("finished=100000/ListFinished-500", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if jobs, err := c.s.ListFinished(b.Context(), 500); err != nil || len(jobs) != 500 {
				b.Fatalf("ListFinished = %d jobs, %v", len(jobs), err)
			}
		}
	})
	b.Run("finished=100000/DeleteFinished-500", func(b *testing.B) {
		// Each round deletes the 500 oldest and, off the clock, creates
		// them again (finished last), so the size stays.
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			old, err := c.s.ListFinished(b.Context(), 500)
			if err != nil {
				b.Fatal(err)
			}
			names := make([]string, len(old))
			for i, j := range old {
				names[i] = j.Name
			}
			b.StartTimer()
			if n, err := c.s.DeleteFinished(b.Context(), names); err != nil || n != 500 {
				b.Fatalf("DeleteFinished = %d, %v", n, err)
			}
			b.StopTimer()
			c.create(b, 0, len(names), func(i int) store.Job {
				return scaleJob(names[i], c.base, c.base.Add(1000*24*time.Hour))
			})
			b.StartTimer()
		}
	})
	// Once each, however often the benchmark runs them: they change the
	// store for good.
	b.Run("finished=100000/index-on-open", once(func(b *testing.B) metrics { return benchIndexOnOpen(b, c, dir) }))
	b.Run("finished=100000/retention-90pct", once(func(b *testing.B) metrics { return benchRetention(b, c, dir) }))
}

// metrics are a one-off benchmark's figures, by unit.
type metrics map[string]float64

// once returns a benchmark that measures with fn the first time it runs
// and reports the same figures every time.
func once(fn func(*testing.B) metrics) func(*testing.B) {
	var m metrics
	return func(b *testing.B) {
		if m == nil {
			m = fn(b)
		}
		for unit, v := range m {
			b.ReportMetric(v, unit)
		}
	}
}

// benchIndexOnOpen measures Open building the index of c's file from
// nothing, as the first start of this version on an earlier version's
// file does; c gets the store it opens.
func benchIndexOnOpen(b *testing.B, c *scaleStore, dir string) metrics {
	if err := c.s.Close(b.Context()); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "voda.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"jobIndex", "jobOrder", "jobLive", "jobFinished", "meta"} {
			if err := tx.DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err = errors.Join(err, db.Close()); err != nil {
		b.Fatal(err)
	}
	var logs bytes.Buffer
	start := time.Now()
	c.s, err = store.Open(b.Context(), "", dir, store.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		b.Fatal(err)
	}
	m := metrics{"s-open-indexing": time.Since(start).Seconds()}
	b.Logf("%s", logs.String())
	// And an open with the index built: the file's checks (boltfile.go)
	// and counting the jobs and the entries.
	if err := c.s.Close(b.Context()); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	if c.s, err = store.Open(b.Context(), "", dir); err != nil {
		b.Fatal(err)
	}
	m["s-open"] = time.Since(start).Seconds()
	return m
}

// benchRetention deletes 90% of c's finished jobs as a retention loop
// would, 1,000 a call, and reports the file's size before and after, and
// after compacting it into a new file (bbolt's Compact), with the time
// each took. It changes the store for good: run it last, once.
func benchRetention(b *testing.B, c *scaleStore, dir string) metrics {
	ctx := b.Context()
	m := metrics{}
	path := filepath.Join(dir, "voda.db")
	size := func(path string) float64 {
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		return float64(info.Size()) / 1e6
	}
	// A commit's cost grows with bbolt's freelist, which the deletions
	// fill: time 20 sequential creates (a commit each) before and after.
	createMs := func(prefix string) float64 {
		start := time.Now()
		for i := range 20 {
			if err := c.s.CreateJob(ctx, scaleJob(fmt.Sprintf("%s-%02d", prefix, i), c.base, time.Time{})); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start).Seconds() / 20 * 1e3
	}
	m["ms-create-before"] = createMs("before")
	m["MB-before"] = size(path)
	start := time.Now()
	for deleted := 0; deleted < c.n*9/10; {
		old, err := c.s.ListFinished(ctx, min(store.MaxDeleteFinished, c.n*9/10-deleted))
		if err != nil {
			b.Fatal(err)
		}
		names := make([]string, len(old))
		for i, j := range old {
			names[i] = j.Name
		}
		n, err := c.s.DeleteFinished(ctx, names)
		if err != nil || n != len(names) {
			b.Fatalf("DeleteFinished = %d, %v", n, err)
		}
		deleted += n
	}
	m["s-delete"] = time.Since(start).Seconds()
	m["MB-after"] = size(path)
	m["ms-create-after"] = createMs("after")
	if err := c.s.Close(ctx); err != nil {
		b.Fatal(err)
	}
	src, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = src.Close() }()
	dst, err := bolt.Open(path+".compact", 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = dst.Close() }()
	start = time.Now()
	if err := bolt.Compact(dst, src, 64<<20); err != nil {
		b.Fatal(err)
	}
	m["s-compact"] = time.Since(start).Seconds()
	m["MB-compacted"] = size(path + ".compact")
	return m
}

// BenchmarkScaleFerretDB runs the reads on the MongoDB store, against the
// embedded FerretDB, at 1,000 live jobs and 1k and 10k finished ones
// (100k take too long to set up). FerretDB v1 uses no index (see
// TestMongoExplain), so these figures grow with the collection: they show
// FerretDB's cost, not what MongoDB's indexes give.
func BenchmarkScaleFerretDB(b *testing.B) {
	s, err := store.Open(b.Context(), storetest.FerretDB(b), "")
	if err != nil {
		b.Fatal(err)
	}
	c := newScaleStore(b, s)
	defer func() { _ = c.s.Close(context.Background()) }()
	for _, n := range []int{1000, 10000} {
		c.createFinished(b, n)
		b.Run(fmt.Sprintf("finished=%d", n), func(b *testing.B) { benchReads(b, c) })
	}
}
