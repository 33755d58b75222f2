package eventhub

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// names renders a job as its name and status, and nothing else: enough
// to see which changes the hub sends.
type names struct{}

func (names) Algorithm(rec store.Scheduler) string { return rec.Settings.Algorithm }

func (names) Job(j store.Job, _ string, _ time.Time) (Rendered, error) {
	data, err := json.Marshal(map[string]string{"name": j.Name, "status": string(j.Status.State.Status)})
	return Rendered{View: data, Scope: Scope{Namespace: j.Namespace, Kind: string(j.Kind)}}, err
}

func (names) Deleted(name string, _ Scope) ([]byte, error) {
	return json.Marshal(map[string]any{"name": name, "deleted": true})
}

func (names) Nodes(map[string]store.Scheduler, []*Job) []*Nodes { return nil }

func (names) Scheduler(rec store.Scheduler) ([]byte, []byte, error) {
	data, err := json.Marshal(rec.Settings)
	return data, data, err
}

func newHub(t *testing.T, lim Limits) (*Hub, store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(ctx) })
	h, err := New(Config{Store: st, Render: names{}, Clock: clocktesting.NewFakeClock(t0), GPUTypes: []string{"v100"},
		Limits: lim, Metrics: metrics.New(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, st
}

func seed(t *testing.T, st store.Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("%s-%06d", prefix, i)
		j := store.Job{Name: name, Kind: "MPIJob", Namespace: "default",
			Spec:   model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, SubmitTime: t0.Add(-time.Duration(n-i) * time.Minute)},
			Status: store.JobStatus{State: model.JobState{Status: model.StatusWaiting}}}
		if err := st.CreateJob(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPollMark: a poll reads the jobs only when the cheap read (the
// scheduler records and the job counts) changed, or when forced.
func TestPollMark(t *testing.T) {
	h, st := newHub(t, Limits{})
	ctx := context.Background()
	seed(t, st, "live", 2)
	read := func(last *mark, force bool) *poll {
		t.Helper()
		p, err := h.read(ctx, 0, last, force)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name     string
		change   func() error
		force    bool
		wantSkip bool
	}{
		{"nothing", func() error { return nil }, false, true},
		{"nothing, forced", func() error { return nil }, true, false},
		{"a job created", func() error { seed(t, st, "new", 1); return nil }, false, false},
		{"a job finished", func() error {
			_, err := st.SaveStatus(ctx, map[string]store.StatusWrite{"live-000000": {
				Status: store.JobStatus{State: model.JobState{Status: model.StatusCompleted}, FinishTime: t0}}})
			return err
		}, false, false},
		{"a job removed", func() error { return st.DeleteJob(ctx, "live-000001") }, false, false},
		{"a scheduler's cycle", func() error { return st.PutStatus(ctx, "v100", store.SchedulerStatus{Now: t0, Cycles: 1}) }, false, false},
		{"a setting", func() error { return st.PutSettings(ctx, "v100", store.Settings{Algorithm: "FIFO"}) }, false, false},
		{"a progress report", func() error {
			_, err := st.SaveProgress(ctx, "new-000000", []byte(`{}`), 0)
			return err
		}, false, true},
	} {
		last := read(nil, true).mark
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := read(&last, c.force)
		if p.skip != c.wantSkip || (p.jobs == nil) != c.wantSkip {
			t.Errorf("%s: skip %v with %d jobs listed, want skip %v", c.name, p.skip, len(p.jobs), c.wantSkip)
		}
	}
}

// next waits for the next frame of sub, or fails.
func next(t *testing.T, sub *Subscriber) *Frame {
	t.Helper()
	select {
	case f := <-sub.Frames():
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame within 10 s")
		return nil
	}
}

// TestSubscribe: a stream starts from a snapshot of the live jobs in
// submission order, gets a change once whatever the polls, gets a
// removal, and the limits refuse streams past them.
func TestSubscribe(t *testing.T) {
	h, st := newHub(t, Limits{MaxStreams: 2, MaxPerCaller: 1, Poll: time.Hour})
	ctx := context.Background()
	seed(t, st, "j", 2)
	sub, snap, err := h.Subscribe(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Jobs) != 2 || snap.Jobs[0].Name != "j-000000" || string(snap.Jobs[1].View) != `{"name":"j-000001","status":"Waiting"}` {
		t.Fatalf("snapshot jobs %+v, want j-000000 then j-000001 waiting", snap.Jobs)
	}
	if len(snap.Schedulers) != 1 {
		t.Errorf("snapshot schedulers %q, want one for v100", snap.Schedulers)
	}
	if _, _, err := h.Subscribe(ctx, "a"); err != ErrCallerStreams {
		t.Errorf("second stream of a caller: %v, want %v", err, ErrCallerStreams)
	}
	if _, err := st.SaveStatus(ctx, map[string]store.StatusWrite{"j-000001": {
		Status: store.JobStatus{State: model.JobState{Status: model.StatusRunning}}}}); err != nil {
		t.Fatal(err)
	}
	h.Kick()
	if f := next(t, sub); f.Event != EventJob || string(f.Data) != `{"job":{"name":"j-000001","status":"Running"}}` ||
		f.Scope != (Scope{Namespace: "default", Kind: "MPIJob"}) {
		t.Fatalf("frame %s %s %+v, want j-000001 running", f.Event, f.Data, f.Scope)
	}
	if err := st.DeleteJob(ctx, "j-000000"); err != nil {
		t.Fatal(err)
	}
	h.Kick() // the first kick's poll saw j-000001 once: only the removal follows
	if f := next(t, sub); f.Event != EventJob || string(f.Data) != `{"deleted":true,"name":"j-000000"}` {
		t.Fatalf("frame %s %s, want the removal of j-000000", f.Event, f.Data)
	}
	if got := h.Held(); len(got) != 1 || got[0] != "j-000001" {
		t.Errorf("held %q, want j-000001", got)
	}
	h.Close()
	select {
	case <-sub.Gone():
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when the hub closed")
	}
	if _, _, err := h.Subscribe(ctx, "b"); err != ErrClosed {
		t.Errorf("stream after Close: %v, want %v", err, ErrClosed)
	}
}
