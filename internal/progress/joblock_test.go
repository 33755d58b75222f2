package progress

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// waitUntil polls cond until it holds, failing t after a few seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestJobLocksTakeTurns: one report of a job at a time, whatever the
// number asking; other jobs do not wait; the table is empty after.
func TestJobLocksTakeTurns(t *testing.T) {
	var l jobLocks
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			turn, _, err := l.lock(context.Background(), "a", 32)
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			runtime.Gosched() // let the others ask while this one holds the turn
			inside.Add(-1)
			l.unlock("a", turn)
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d reports of one job held the turn at once, want 1", m)
	}
	if jobs, _ := l.refs("a"); jobs != 0 {
		t.Errorf("%d jobs left in the table after every report, want 0", jobs)
	}

	turnA, _, err := l.lock(context.Background(), "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	turnB, waited, err := l.lock(context.Background(), "b", 1)
	if err != nil || waited {
		t.Fatalf("job b waited for job a: waited %v, err %v", waited, err)
	}
	l.unlock("b", turnB)
	l.unlock("a", turnA)
	if jobs, _ := l.refs("a"); jobs != 0 {
		t.Errorf("%d jobs left in the table, want 0", jobs)
	}
}

// TestJobLocksCapWaiters: beyond maxWaiting reports waiting, a job's
// report is ErrBusy at once; a waiter whose context ends is ErrBusy too
// and leaves the queue; the others get their turn in order.
func TestJobLocksCapWaiters(t *testing.T) {
	const maxWaiting = 3
	var l jobLocks
	turn, waited, err := l.lock(context.Background(), "a", maxWaiting)
	if err != nil || waited {
		t.Fatalf("first lock: waited %v, err %v", waited, err)
	}
	type result struct {
		i      int
		waited bool
		err    error
	}
	results := make(chan result, maxWaiting)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range maxWaiting {
		c := context.Background()
		if i == 0 {
			c = ctx // the one that gives up
		}
		go func() {
			e, w, err := l.lock(c, "a", maxWaiting)
			if err == nil {
				l.unlock("a", e)
			}
			results <- result{i, w, err}
		}()
		waitUntil(t, fmt.Sprintf("waiter %d queued", i), func() bool { _, n := l.refs("a"); return n == i+2 })
	}
	if _, _, err := l.lock(context.Background(), "a", maxWaiting); !errors.Is(err, ErrBusy) {
		t.Fatalf("a report beyond %d waiting: %v, want ErrBusy", maxWaiting, err)
	}
	cancel()
	if r := <-results; r.i != 0 || !errors.Is(r.err, ErrBusy) || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the waiter that gave up: %+v, want waiter 0 with ErrBusy and context.Canceled", r)
	}
	waitUntil(t, "the waiter that gave up left the queue", func() bool { _, n := l.refs("a"); return n == maxWaiting })
	l.unlock("a", turn)
	for range maxWaiting - 1 {
		if r := <-results; r.err != nil || !r.waited {
			t.Errorf("waiter %d: waited %v, err %v; want its turn after waiting", r.i, r.waited, r.err)
		}
	}
	if jobs, _ := l.refs("a"); jobs != 0 {
		t.Errorf("%d jobs left in the table, want 0", jobs)
	}
}

// memStore is one job's record in memory, with SaveProgress's revision
// check; conflict makes every write lose to another writer.
type memStore struct {
	mu       sync.Mutex
	job      store.Job
	saves    int
	conflict bool
}

func newMemStore(name string) *memStore {
	return &memStore{job: store.Job{Name: name, Status: store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 1}}}}
}

func (m *memStore) GetJob(_ context.Context, name string) (store.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name != m.job.Name {
		return store.Job{}, store.ErrNotFound
	}
	return m.job, nil
}

func (m *memStore) SaveProgress(_ context.Context, name string, data []byte, revision int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves++
	if m.conflict || revision != m.job.ProgressRevision {
		return 0, fmt.Errorf("save progress of %s: %w", name, store.ErrConflict)
	}
	m.job.Progress, m.job.ProgressRevision = data, revision+1
	return revision + 1, nil
}

type countClock struct{ n atomic.Int64 }

func (c *countClock) Now() time.Time { return time.Unix(c.n.Add(1), 0) }

type counter struct{ n atomic.Int64 }

func (c *counter) Inc() { c.n.Add(1) }

// TestIngesterBusyOnConflicts: a report whose every write loses to
// another writer (another replica) is ErrBusy after maxConflicts tries,
// each counted, and keeps nothing.
func TestIngesterBusyOnConflicts(t *testing.T) {
	st := newMemStore("a")
	st.conflict = true
	var conflicts counter
	in := &Ingester{Store: st, Clock: &countClock{}, Conflicts: &conflicts}
	_, err := in.Ingest(context.Background(), "a", Report{Generation: "g", Workers: 1, Steps: 1, Epoch: 1})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("Ingest: %v, want ErrBusy", err)
	}
	if st.saves != maxConflicts || conflicts.n.Load() != maxConflicts {
		t.Errorf("%d writes tried and %d conflicts counted, want %d each", st.saves, conflicts.n.Load(), maxConflicts)
	}
	if st.job.Progress != nil {
		t.Errorf("progress kept: %s", st.job.Progress)
	}
	if jobs, _ := in.locks.refs("a"); jobs != 0 {
		t.Errorf("%d jobs left in the table, want 0", jobs)
	}
}

// TestIngesterRereadsAfterWaiting: a report that waited for its turn does
// not write over the copy of the job its caller read before waiting (the
// report before it changed the state), so it meets no conflict.
func TestIngesterRereadsAfterWaiting(t *testing.T) {
	ctx := context.Background()
	st := newMemStore("a")
	var conflicts counter
	in := &Ingester{Store: st, Clock: &countClock{}, Conflicts: &conflicts}
	stale, _ := st.GetJob(ctx, "a")
	turn, _, err := in.locks.lock(ctx, "a", DefaultMaxWaiting)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := in.IngestRead(ctx, "a", Report{Generation: "g2", Workers: 1, Steps: 1, Epoch: 1}, &stale)
		done <- err
	}()
	waitUntil(t, "the report waiting for its turn", func() bool { _, n := in.locks.refs("a"); return n == 2 })
	// What the turn's holder writes meanwhile: the copy is now stale.
	if _, err := st.SaveProgress(ctx, "a", []byte(`{}`), 0); err != nil {
		t.Fatal(err)
	}
	in.locks.unlock("a", turn)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := conflicts.n.Load(); n != 0 || st.job.ProgressRevision != 2 {
		t.Errorf("%d conflicts, revision %d; want 0 conflicts and revision 2 (a fresh read)", n, st.job.ProgressRevision)
	}
}

// BenchmarkJobLocks is what taking turns adds to a report: a turn taken
// and passed on, for 1,000 jobs reporting at once (no job waits).
func BenchmarkJobLocks(b *testing.B) {
	var l jobLocks
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d", i)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		name := names[next.Add(1)%int64(len(names))]
		for pb.Next() {
			turn, _, err := l.lock(context.Background(), name, DefaultMaxWaiting)
			if err != nil {
				b.Error(err)
				return
			}
			l.unlock(name, turn)
		}
	})
}
