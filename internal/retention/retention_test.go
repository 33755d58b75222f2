package retention

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// now is the schedulers' clock in every test.
var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// stores are the two stores every test runs on: the embedded one, and
// MongoDB's over the embedded FerretDB.
var stores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"bolt", func(t *testing.T) store.Store { return open(t, "", t.TempDir()) }},
	{"mongo", func(t *testing.T) store.Store { return open(t, storetest.FerretDB(t), "") }},
}

func open(t *testing.T, uri, dir string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), uri, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// job is a job of a test's store: finished ago before now (never
// finished when ago is negative; finished without a finish time when
// noFinish), submitted in name order.
type job struct {
	name     string
	ago      time.Duration
	noFinish bool
}

func create(t *testing.T, s store.Store, jobs []job) {
	t.Helper()
	for i, jb := range jobs {
		submit := now.Add(-400 * day).Add(time.Duration(i) * time.Second)
		j := store.Job{Name: jb.name, Kind: "MPIJob", Manifest: []byte(`{}`),
			Spec:   model.JobSpec{Name: jb.name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 2, SubmitTime: submit},
			Status: store.JobStatus{State: model.JobState{Status: model.StatusRunning}, Updated: submit}}
		switch {
		case jb.noFinish:
			j.Status.State.Status = model.StatusFailed
		case jb.ago >= 0:
			j.Status.State.Status = model.StatusCompleted
			j.Status.FinishTime = now.Add(-jb.ago)
		}
		if err := s.CreateJob(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
}

func remaining(t *testing.T, s store.Store) []string {
	t.Helper()
	jobs, err := s.ListJobs(context.Background(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	return names
}

// TestPass: a pass removes what each rule says, oldest finish first
// (whatever the submission order), in batches, and nothing live.
func TestPass(t *testing.T) {
	// Submitted in this order; finished in another.
	jobs := []job{
		{name: "a-live-old", ago: -1},
		{name: "b-40d", ago: 40 * day},
		{name: "c-10d", ago: 10 * day},
		{name: "d-31d", ago: 31 * day},
		{name: "e-1h", ago: time.Hour},
		{name: "f-no-finish-time", noFinish: true},
		{name: "g-29d", ago: 29 * day},
		{name: "h-live", ago: -1},
	}
	all := []string{"a-live-old", "b-40d", "c-10d", "d-31d", "e-1h", "f-no-finish-time", "g-29d", "h-live"}
	without := func(gone ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(gone, n) })
	}
	cases := []struct {
		name     string
		maxAge   time.Duration
		maxCount int
		batch    int
		want     Result
		kept     []string
	}{
		{
			name: "age", maxAge: 30 * day,
			want: Result{ByAge: 3, Batches: 1, Live: 2, Finished: 3},
			kept: without("b-40d", "d-31d", "f-no-finish-time"),
		},
		{
			name: "count: the oldest finished go", maxCount: 2,
			want: Result{ByCount: 4, Batches: 1, Live: 2, Finished: 2},
			kept: without("f-no-finish-time", "b-40d", "d-31d", "g-29d"),
		},
		{
			name: "count within the limit", maxCount: 6,
			want: Result{Live: 2, Finished: 6},
			kept: all,
		},
		{
			name: "count, then age", maxAge: 30 * day, maxCount: 5,
			want: Result{ByCount: 1, ByAge: 2, Batches: 2, Live: 2, Finished: 3},
			kept: without("b-40d", "d-31d", "f-no-finish-time"),
		},
		{
			name: "batches of 1", maxAge: 20 * day, batch: 1,
			want: Result{ByAge: 4, Batches: 4, Live: 2, Finished: 2},
			kept: without("b-40d", "d-31d", "f-no-finish-time", "g-29d"),
		},
		{
			name: "batches of 3", maxAge: time.Minute, batch: 3,
			want: Result{ByAge: 6, Batches: 2, Live: 2, Finished: 0},
			kept: []string{"a-live-old", "h-live"},
		},
		{
			name: "none old enough but the one without a finish time", maxAge: 50 * day,
			want: Result{ByAge: 1, Batches: 1, Live: 2, Finished: 5},
			kept: without("f-no-finish-time"),
		},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					s := st.open(t)
					create(t, s, jobs)
					// Retention never touches the applications' histories.
					if err := s.SaveHistory(context.Background(), "v100", "bert", []byte(`{"x":1}`)); err != nil {
						t.Fatal(err)
					}
					m := metrics.New(prometheus.NewRegistry())
					r, err := New(Config{Store: s, MaxAge: c.maxAge, MaxCount: c.maxCount, Batch: c.batch, Pause: time.Millisecond,
						Clock: clocktesting.NewFakePassiveClock(now), Metrics: m})
					if err != nil {
						t.Fatal(err)
					}
					res, err := r.Pass(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(c.want, res); diff != "" {
						t.Errorf("result (-want,+got):\n%s", diff)
					}
					if diff := cmp.Diff(c.kept, remaining(t, s)); diff != "" {
						t.Errorf("jobs kept (-want,+got):\n%s", diff)
					}
					for reason, want := range map[string]int{metrics.RemovedAge: c.want.ByAge, metrics.RemovedCount: c.want.ByCount, metrics.RemovedDeleted: 0} {
						if got := testutil.ToFloat64(m.JobsRemoved.WithLabelValues(reason)); got != float64(want) {
							t.Errorf("voda_jobs_removed_total{reason=%q} = %v, want %d", reason, got, want)
						}
					}
					if got := testutil.ToFloat64(m.FinishedJobs.WithLabelValues()); got != float64(c.want.Finished) {
						t.Errorf("voda_finished_jobs = %v, want %d", got, c.want.Finished)
					}
					if h, err := s.ListHistories(context.Background(), "v100"); err != nil || string(h["bert"]) != `{"x":1}` {
						t.Errorf("history after retention: %q, %v", h["bert"], err)
					}
				})
			}
		})
	}
}

// Several processes may run passes at once: together they remove exactly
// what one would, and none fails.
func TestConcurrentPasses(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			var jobs []job
			for i := range 60 {
				jobs = append(jobs, job{name: fmt.Sprintf("done-%02d", i), ago: time.Duration(60-i) * day})
			}
			jobs = append(jobs, job{name: "live", ago: -1})
			create(t, s, jobs)
			var wg sync.WaitGroup
			results := make([]Result, 3)
			for i := range results {
				r, err := New(Config{Store: s, MaxAge: 30 * day, MaxCount: 20, Batch: 4, Pause: time.Millisecond,
					Clock: clocktesting.NewFakePassiveClock(now)})
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					var err error
					if results[i], err = r.Pass(context.Background()); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			removed := 0
			for _, res := range results {
				removed += res.ByAge + res.ByCount
			}
			// 30 are older than 30 days; 40 remain, 20 beyond the count.
			if removed != 40 {
				t.Errorf("the passes removed %d jobs in all (%+v), want 40", removed, results)
			}
			want := []string{"live"}
			for i := 40; i < 60; i++ {
				want = append(want, fmt.Sprintf("done-%02d", i))
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, remaining(t, s)); diff != "" {
				t.Errorf("jobs kept (-want,+got):\n%s", diff)
			}
		})
	}
}

// Run makes a pass at start and one every interval of wall time, and
// the age is measured on the schedulers' clock, not the wall clock; it
// ends when its context does.
func TestRun(t *testing.T) {
	s := open(t, "", t.TempDir())
	create(t, s, []job{{name: "old", ago: 31 * day}, {name: "young", ago: 29 * day}, {name: "live", ago: -1}})
	sched := clocktesting.NewFakeClock(now)
	wall := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	m := metrics.New(prometheus.NewRegistry())
	r, err := New(Config{Store: s, MaxAge: 30 * day, Interval: time.Minute, Clock: sched, Wall: wall, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()

	waitFor(t, "the first pass", func() bool {
		return testutil.ToFloat64(m.RetentionLastRun.WithLabelValues()) != 0 && slices.Equal(remaining(t, s), []string{"live", "young"})
	})
	if got, want := testutil.ToFloat64(m.RetentionLastRun.WithLabelValues()), float64(wall.Now().Unix()); got != want {
		t.Errorf("last run %v, want the wall clock's %v", got, want)
	}
	// Two days pass on the schedulers' clock: the next pass, a minute of
	// wall time later, removes the job that is now 31 days old.
	sched.Step(2 * day)
	waitFor(t, "the pass to wait for its interval", func() bool { return wall.HasWaiters() })
	if got := remaining(t, s); !slices.Equal(got, []string{"live", "young"}) {
		t.Fatalf("jobs %v before the interval passed", got)
	}
	wall.Step(time.Minute)
	waitFor(t, "the second pass", func() bool {
		return testutil.ToFloat64(m.JobsRemoved.WithLabelValues(metrics.RemovedAge)) == 2 && slices.Equal(remaining(t, s), []string{"live"})
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil when its context ends", err)
	}
}

// A pass that fails is counted and the next one tries again; Run goes on.
func TestRunSurvivesErrors(t *testing.T) {
	s := open(t, "", t.TempDir())
	create(t, s, []job{{name: "old", ago: 31 * day}})
	fs := &failingStore{Store: s, fail: true}
	wall := clocktesting.NewFakeClock(now)
	m := metrics.New(prometheus.NewRegistry())
	r, err := New(Config{Store: fs, MaxAge: 30 * day, Clock: clocktesting.NewFakePassiveClock(now), Wall: wall, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Run(ctx) }()
	waitFor(t, "a failed pass", func() bool { return testutil.ToFloat64(m.RetentionErrors.WithLabelValues()) == 1 })
	fs.set(false)
	waitFor(t, "the pass to wait for its interval", func() bool { return wall.HasWaiters() })
	wall.Step(DefaultInterval)
	waitFor(t, "the next pass", func() bool { return len(remaining(t, s)) == 0 })
	if got := testutil.ToFloat64(m.RetentionErrors.WithLabelValues()); got != 1 {
		t.Errorf("errors %v, want 1", got)
	}
}

func TestNewRefuses(t *testing.T) {
	s := open(t, "", t.TempDir())
	for _, c := range []Config{
		{},
		{Store: s},
		{Store: s, MaxAge: -time.Hour},
		{Store: s, MaxCount: -1},
		{Store: s, MaxCount: 1, Batch: store.MaxDeleteFinished + 1},
		{Store: s, MaxCount: 1, Interval: -time.Second},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) = nil error", c)
		}
	}
}

// failingStore fails CountJobs while fail is set.
type failingStore struct {
	store.Store
	mu   sync.Mutex
	fail bool
}

func (f *failingStore) set(fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

func (f *failingStore) CountJobs(ctx context.Context) (int, int, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return 0, 0, fmt.Errorf("injected: %w", store.ErrClosed)
	}
	return f.Store.CountJobs(ctx)
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
