// Package storetest is the contract every store.Store implementation must
// pass, plus a MongoDB-compatible server (embedded FerretDB) for tests.
// Only tests import it, so FerretDB never reaches the production binary.
//
// Use it from an implementation's test:
//
//	storetest.Run(t, func(t *testing.T) storetest.Storage {
//		dir := t.TempDir()
//		return storetest.Storage{Open: func(ctx context.Context) (store.Store, error) {
//			return store.Open(ctx, "", dir)
//		}}
//	})
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// Opener opens a store on one piece of storage (a directory, a database).
// The suite calls it again after closing a store, to check that what was
// written is still there.
type Opener func(ctx context.Context) (store.Store, error)

// Damager writes job records a store cannot decode straight into its
// storage, as a bug, a hand edit or a disk error could leave them, and
// reads back what SetAside kept of them. The suite calls it only while no
// store is open on the storage (the embedded store locks its file).
type Damager interface {
	// DamageJob stores a record of job name that does not decode as a
	// whole, yet holds readably the fields of d that are not zero (and
	// nothing readable when d is zero), and returns the record as stored:
	// the bytes SetAside must keep.
	DamageJob(ctx context.Context, name string, d Damage) ([]byte, error)
	// Original returns what the stored record of job name keeps of the
	// record SetAside replaced; nil if nothing.
	Original(ctx context.Context, name string) ([]byte, error)
}

// Damage says what a damaged record still holds readably.
type Damage struct {
	GPUType        string
	Status         model.Status
	StatusRevision int64
	// SubmitTime, unless zero, is stored as the store stores it.
	SubmitTime time.Time
}

// Storage is fresh, empty storage for one test.
type Storage struct {
	// Open opens a store on the storage.
	Open Opener
	// Damage, if not nil, damages records in the storage; the tests of
	// unreadable records are skipped without it.
	Damage Damager
}

// Factory allocates fresh, empty storage for one test. The suite's
// subtests run in parallel, each calling Factory once.
type Factory func(t *testing.T) Storage

// Run runs the contract suite; every subtest gets its own storage.
//
// The contract, beyond what store.Store documents:
//   - times come back in UTC, to the nanosecond; the zero time comes back
//     as the zero time and the Unix epoch as the epoch; times outside the
//     int64-nanosecond range (before 1677-09-21, after 2262-04-11) are
//     rejected with an error and nothing is written;
//   - empty slices, maps and byte strings come back nil;
//   - NaN and ±Inf floats survive;
//   - every method but Close returns an error matching ctx.Err() when ctx
//     is done, without writing; after Close, every method (Close too)
//     returns an error wrapping store.ErrClosed;
//   - SaveStatus reports the writes it did not make in sorted lists, nil
//     when empty; concurrent writers over one revision make exactly one
//     write; a status written Completed, Failed or Canceled (or created
//     so) is never replaced;
//   - SaveProgress writes only over the stored ProgressRevision (others
//     are store.ErrConflict, and of concurrent writers over one revision
//     exactly one succeeds), touches no other field and is touched by no
//     other write; ListHistories returns nil when there is nothing;
//   - a record that does not decode is returned, marked Unreadable, with
//     its name, GPU type, status and submit time where they can be read
//     (tested when the Storage has a Damager), placed in ListJobs' order
//     by that submit time (pages of them join up), and SetAside replaces
//     it keeping the original bytes;
//   - ListJobs' pages (Limit, After) joined up are the unpaged list, for
//     any limit and filter; After is any position, a job's or not;
//   - ListFinished, CountJobs and DeleteFinished follow every write that
//     changes a job's liveness (CreateJob, SaveStatus, SetAside, DeleteJob,
//     DeleteFinished), and survive a reopen; DeleteFinished deletes only
//     terminal jobs, with their progress.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f Factory)
	}{
		{"RoundTrip", testRoundTrip},
		{"RoundTripEdges", testRoundTripEdges},
		{"NamespaceFromManifest", testNamespaceFromManifest},
		{"TimeOutOfRange", testTimeOutOfRange},
		{"EmptyKeys", testEmptyKeys},
		{"Exists", testExists},
		{"SameNameRace", testSameNameRace},
		{"ConcurrentCreates", testConcurrentCreates},
		{"ListOrderAndFilters", testListOrderAndFilters},
		{"Pages", testPages},
		{"Finished", testFinished},
		{"OwnedFields", testOwnedFields},
		{"OwnedFieldsConcurrent", testOwnedFieldsConcurrent},
		{"SaveStatusMissing", testSaveStatusMissing},
		{"SaveStatusRevisions", testSaveStatusRevisions},
		{"SaveStatusTerminal", testSaveStatusTerminal},
		{"SaveStatusRace", testSaveStatusRace},
		{"Progress", testProgress},
		{"ProgressLimit", testProgressLimit},
		{"ProgressRace", testProgressRace},
		{"Histories", testHistories},
		{"SetAside", testSetAside},
		{"Unreadable", testUnreadable},
		{"DeleteJob", testDeleteJob},
		{"NotFound", testNotFound},
		{"Schedulers", testSchedulers},
		{"SchedulersConcurrent", testSchedulersConcurrent},
		{"Durability", testDurability},
		{"Closed", testClosed},
		{"CancelledContext", testCancelledContext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, f)
		})
	}
}

// newStore allocates storage, opens a store on it and returns it with a
// function that opens another store on the same storage. Every store is
// closed when the test ends.
func newStore(t *testing.T, f Factory) (store.Store, func() store.Store) {
	t.Helper()
	s, reopen, _ := newStorage(t, f)
	return s, reopen
}

// newStorage is newStore also returning the storage's Damager.
func newStorage(t *testing.T, f Factory) (store.Store, func() store.Store, Damager) {
	t.Helper()
	storage := f(t)
	reopen := func() store.Store {
		t.Helper()
		s, err := storage.Open(context.Background())
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(context.Background()); err != nil && !errors.Is(err, store.ErrClosed) {
				t.Errorf("close store: %v", err)
			}
		})
		return s
	}
	return reopen(), reopen, storage.Damage
}

// ist is a non-UTC zone: stores must return the same instants in UTC.
func ist() *time.Location { return time.FixedZone("IST", 5*3600+1800) }

// fullJob returns a job with every field set (checkAllSet proves it), in a
// non-UTC zone with nanosecond times.
func fullJob(name string) store.Job {
	base := time.Date(2024, 3, 1, 12, 30, 45, 123456789, ist())
	return store.Job{
		Name:      name,
		Kind:      "PyTorchJob",
		Namespace: "team-a",
		Manifest:  []byte(`{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"` + name + `","namespace":"team-a"}}`),
		Spec: model.JobSpec{
			Name: name, GPUType: "v100", MinWorkers: 2, MaxWorkers: 8, RequestedWorkers: 4, GPUsPerWorker: 2,
			Priority: 3, Epochs: 90, SubmitTime: base,
		},
		Model:           "resnet50",
		Application:     "resnet50-imagenet",
		ProgressLog:     `Epoch (?P<epoch>[0-9]+)`,
		DeleteRequested: true,
		Status: store.JobStatus{
			State: model.JobState{
				Status:          model.StatusRunning,
				GPUs:            4,
				Placement:       model.JobPlacement{{Node: "node-b", Workers: 3}, {Node: "node-a", Workers: 1}},
				AttainedService: 1234.5,
				FirstStart:      base.Add(time.Second + 1),
				LastChange:      base.Add(2*time.Minute + 7),
				PrevGPUs:        2,
				Queue:           2,
				RunSeconds:      600.25,
				QueueSince:      base.Add(3),
				QueueService:    77.125,
				QueueRunSeconds: 33.5,
				WaitingSince:    base.Add(-time.Hour + 11),
				Restarts:        2,
			},
			Est:            model.Estimates{RemainingSeconds: 3600.5, Speedup: []float64{0, 1, 1.9, 2.7, 3.4}, RestartSeconds: 42.5, Batch: []int{0, 128, 256, 384, 512}},
			Fit:            &goodput.Params{AlphaC: 0.0125, BetaC: 0.000375, AlphaR: 0.05, BetaR: 0.0025, AlphaN: 0.25, BetaN: 0.0125, Gamma: 1.5},
			Progress:       0.42,
			QueuePosition:  3,
			EstimatedStart: base.Add(time.Hour + 13),
			FinishTime:     base.Add(2*time.Hour + 17),
			Updated:        base.Add(3*time.Hour + 19),
			Reason:         store.ReasonUnschedulable,
			Message:        "needs 16 GPUs, v100 has 8 in all",
			Allocations: []store.Allocation{
				{At: base.Add(time.Second + 1), Placement: model.JobPlacement{{Node: "node-a", Workers: 2}}},
				{At: base.Add(time.Minute + 5), Placement: model.JobPlacement{{Node: "node-c", Workers: 4}}},
				{At: base.Add(2*time.Minute + 7), Placement: model.JobPlacement{{Node: "node-b", Workers: 3}, {Node: "node-a", Workers: 1}}},
			},
		},
		StatusRevision:   7,
		Progress:         []byte(`{"generation":"r7f3-0-4","steps":1200,"throughput":{"4@1":612.5}}`),
		ProgressRevision: 3,
	}
}

// testNamespaceFromManifest: a record stored before namespaces were
// recorded has its manifest's, so that it keeps its owner.
func testNamespaceFromManifest(t *testing.T, f Factory) {
	s, _ := newStore(t, f)
	old := simpleJob("old-1", "v100", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), model.StatusWaiting)
	old.Manifest = []byte(`{"kind":"MPIJob","metadata":{"name":"old-1","namespace":"team-b"}}`)
	mustCreate(t, s, old)
	bare := simpleJob("bare-1", "v100", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), model.StatusWaiting)
	mustCreate(t, s, bare)
	for name, want := range map[string]string{"old-1": "team-b", "bare-1": ""} {
		got, err := s.GetJob(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Namespace != want {
			t.Errorf("GetJob(%s).Namespace = %q, want %q", name, got.Namespace, want)
		}
	}
}

// simpleJob returns a minimal job of a GPU type, submit time and status.
func simpleJob(name, gpuType string, submit time.Time, status model.Status) store.Job {
	return store.Job{
		Name: name,
		Kind: "MPIJob",
		Spec: model.JobSpec{
			Name: name, GPUType: gpuType, MinWorkers: 1, MaxWorkers: 1, RequestedWorkers: 1,
			SubmitTime: submit,
		},
		Status: store.JobStatus{State: model.JobState{Status: status}},
	}
}

func testRoundTrip(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	want := fullJob("full-1")
	// Unreadable is not a stored field: a store sets it on a record it
	// cannot decode (testUnreadable), so no fixture can set it. Nor is
	// Spec.Team: a job's team is its namespace, which is stored.
	checkAllSet(t, "Job", reflect.ValueOf(want), "Job.Unreadable", "Job.Spec.Team")

	in := fullJob("full-1")
	mustCreate(t, s, in)
	// The store must not alias the caller's memory.
	in.Manifest[0] = 'X'
	in.Progress[0] = 'X'
	in.Status.Est.Speedup[1] = 99
	in.Status.State.Placement[0].Workers = 99

	got := mustGet(t, s, want.Name)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetJob after CreateJob (-want +got):\n%s", diff)
	}
	checkUTC(t, "GetJob", reflect.ValueOf(got))

	got.Manifest[0] = 'Y'
	got.Progress[0] = 'Y'
	got.Status.Est.Speedup[1] = 98
	if diff := cmp.Diff(want, mustGet(t, s, want.Name)); diff != "" {
		t.Errorf("GetJob after changing a returned job (-want +got):\n%s", diff)
	}

	list, err := s.ListJobs(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if diff := cmp.Diff([]store.Job{want}, list); diff != "" {
		t.Errorf("ListJobs (-want +got):\n%s", diff)
	}
	checkUTC(t, "ListJobs", reflect.ValueOf(list))
}

// testRoundTripEdges covers zero and boundary times, empty versus nil,
// and non-finite floats.
func testRoundTripEdges(t *testing.T, f Factory) {
	s, _ := newStore(t, f)
	in := store.Job{
		Name:     "edges",
		Manifest: []byte{},
		Progress: []byte{},
		Spec:     model.JobSpec{Name: "edges", SubmitTime: time.Unix(0, 0)},
		Status: store.JobStatus{
			State: model.JobState{
				Placement:       model.JobPlacement{},
				AttainedService: math.Inf(1),
				FirstStart:      time.Date(1969, 7, 20, 20, 17, 40, 1, time.UTC),
				LastChange:      time.Unix(0, math.MaxInt64).In(ist()),
				QueueSince:      time.Unix(0, math.MinInt64),
				QueueService:    math.Copysign(0, -1),
			},
			Est:      model.Estimates{RemainingSeconds: math.Inf(-1), Speedup: []float64{}},
			Progress: math.NaN(),
		},
	}
	want := in
	want.Manifest = nil
	want.Progress = nil
	want.Status.State.Placement = nil
	want.Status.Est.Speedup = nil
	mustCreate(t, s, in)
	got := mustGet(t, s, "edges")
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("GetJob (-want +got):\n%s", diff)
	}
	// cmp compares times with Equal; zero must stay zero, not the epoch.
	if !got.Spec.SubmitTime.Equal(time.Unix(0, 0)) || got.Spec.SubmitTime.IsZero() {
		t.Errorf("SubmitTime = %v, want the Unix epoch", got.Spec.SubmitTime)
	}
	if !got.Status.Updated.IsZero() {
		t.Errorf("Updated = %v, want the zero time", got.Status.Updated)
	}
	checkUTC(t, "GetJob", reflect.ValueOf(got))
	for _, v := range []float64{got.Status.State.AttainedService, got.Status.Est.RemainingSeconds} {
		if !math.IsInf(v, 0) {
			t.Errorf("got %v, want an infinity", v)
		}
	}
}

func testTimeOutOfRange(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)

	bad := simpleJob("far", "v100", far, model.StatusWaiting)
	if err := s.CreateJob(ctx, bad); err == nil {
		t.Errorf("CreateJob with submit time %v: no error", far)
	}
	wantErrIs(t, "GetJob after a rejected create", getErr(s, ctx, "far"), store.ErrNotFound)

	mustCreate(t, s, simpleJob("a", "v100", time.Unix(1, 0), model.StatusWaiting))
	mustCreate(t, s, simpleJob("b", "v100", time.Unix(2, 0), model.StatusWaiting))
	good := store.JobStatus{State: model.JobState{Status: model.StatusRunning}, Progress: 0.5}
	_, err := s.SaveStatus(ctx, map[string]store.StatusWrite{
		"a": {Status: good},
		"b": {Status: store.JobStatus{State: model.JobState{Status: model.StatusRunning}, Updated: far}},
	})
	if err == nil {
		t.Errorf("SaveStatus with a time in %d: no error", far.Year())
	}
	if got := mustGet(t, s, "a"); got.Status.State.Status != model.StatusWaiting || got.StatusRevision != 0 {
		t.Errorf("SaveStatus that failed wrote job a's status: revision %d, %+v", got.StatusRevision, got.Status)
	}

	// Too long an allocation history is refused the same way.
	long := make([]store.Allocation, store.MaxAllocations+1)
	for i := range long {
		long[i] = store.Allocation{At: time.Unix(int64(i), 0), Placement: model.JobPlacement{{Node: "n", Workers: i%2 + 1}}}
	}
	_, err = s.SaveStatus(ctx, map[string]store.StatusWrite{
		"a": {Status: good},
		"b": {Status: store.JobStatus{State: model.JobState{Status: model.StatusRunning}, Allocations: long}},
	})
	if err == nil {
		t.Errorf("SaveStatus with %d allocations: no error", len(long))
	}
	if got := mustGet(t, s, "a"); got.StatusRevision != 0 {
		t.Errorf("SaveStatus that failed on allocations wrote job a's status: revision %d", got.StatusRevision)
	}

	if err := s.PutStatus(ctx, "v100", store.SchedulerStatus{Now: far}); err == nil {
		t.Errorf("PutStatus with a time in %d: no error", far.Year())
	}
	wantErrIs(t, "GetScheduler after a rejected PutStatus", schedErr(s, ctx, "v100"), store.ErrNotFound)
}

func testEmptyKeys(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	if err := s.CreateJob(ctx, simpleJob("", "v100", time.Unix(1, 0), "")); err == nil {
		t.Error("CreateJob with an empty name: no error")
	}
	if err := s.PutSettings(ctx, "", store.Settings{Algorithm: "fifo"}); err == nil {
		t.Error("PutSettings with an empty GPU type: no error")
	}
	if err := s.PutStatus(ctx, "", store.SchedulerStatus{Cycles: 1}); err == nil {
		t.Error("PutStatus with an empty GPU type: no error")
	}
	wantNames(t, s, store.ListOptions{}, nil)
	if list, err := s.ListSchedulers(ctx); err != nil || len(list) != 0 {
		t.Errorf("ListSchedulers = %v, %v; want none", list, err)
	}
}

func testExists(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	first := fullJob("dup")
	mustCreate(t, s, first)

	second := simpleJob("dup", "k80", time.Unix(5, 0), model.StatusWaiting)
	wantErrIs(t, "CreateJob of a taken name", s.CreateJob(ctx, second), store.ErrExists)
	if diff := cmp.Diff(first, mustGet(t, s, "dup")); diff != "" {
		t.Errorf("duplicate CreateJob changed the job (-want +got):\n%s", diff)
	}

	finished := first.Status
	finished.State.Status = model.StatusCompleted
	mustSave(t, s, map[string]store.JobStatus{"dup": finished})
	wantErrIs(t, "CreateJob of a finished job's name", s.CreateJob(ctx, second), store.ErrExists)
}

func testSameNameRace(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			j := simpleJob("same", "v100", time.Unix(int64(i), 0), "")
			j.Model = fmt.Sprint("model-", i)
			errs[i] = s.CreateJob(ctx, j)
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("creators %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrExists):
			t.Errorf("creator %d: %v, want ErrExists", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no creator succeeded")
	}
	if got, want := mustGet(t, s, "same").Model, fmt.Sprint("model-", winner); got != want {
		t.Errorf("stored job's Model = %q, want the winner's %q", got, want)
	}
	wantNames(t, s, store.ListOptions{}, []string{"same"})
}

func testConcurrentCreates(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	// 1,000 creates from 64 goroutines at once: as concurrent as a burst
	// of submissions through the API, yet within a MongoDB driver's pool
	// (100 connections), so that on a busy machine no create waits its
	// 30 s for a connection behind hundreds of others (FerretDB's SQLite
	// backend then serves a few dozen creates a second).
	const n, workers = 1000, 64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				// Scatter submit times (with ties) so order is not name order.
				submit := base.Add(time.Duration(i*7919%(n/2)) * time.Millisecond)
				errs[i] = s.CreateJob(ctx, simpleJob(fmt.Sprintf("job-%04d", i), "v100", submit, ""))
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("CreateJob job-%04d: %v", i, err)
		}
	}
	list, err := s.ListJobs(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if len(list) != n {
		t.Errorf("ListJobs returned %d jobs, want %d", len(list), n)
	}
	seen := make(map[string]int)
	for _, j := range list {
		seen[j.Name]++
	}
	for i := range n {
		if name := fmt.Sprintf("job-%04d", i); seen[name] != 1 {
			t.Errorf("%s listed %d times, want once", name, seen[name])
		}
	}
	if !slices.IsSortedFunc(list, byOrder) {
		t.Error("ListJobs not ordered by submit time, then name")
	}
}

func byOrder(a, b store.Job) int {
	if c := a.Spec.SubmitTime.Compare(b.Spec.SubmitTime); c != 0 {
		return c
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

func testListOrderAndFilters(t *testing.T, f Factory) {
	s, _ := newStore(t, f)
	tA := time.Date(2024, 1, 1, 5, 30, 0, 1, ist())
	tB := tA.Add(time.Millisecond).UTC()
	jobs := []store.Job{
		simpleJob("y", "k80", tB, model.StatusRunning),
		simpleJob("c-tie", "v100", tA, model.StatusCanceled),
		simpleJob("zeta", "v100", time.Time{}, model.StatusWaiting),
		simpleJob("fresh", "v100", tB, ""),
		simpleJob("a-tie", "k80", tA.UTC(), model.StatusFailed),
		simpleJob("epoch", "v100", time.Unix(0, 0), model.StatusSubmitted),
		simpleJob("aa-later", "v100", tA.Add(1), model.StatusCompleted),
		simpleJob("x", "v100", tB, model.StatusWaiting),
		simpleJob("pre", "k80", time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC), model.StatusCompleted),
		simpleJob("b-tie", "v100", tA, model.StatusRunning),
	}
	for _, j := range jobs {
		mustCreate(t, s, j)
	}
	cases := []struct {
		opts store.ListOptions
		want []string
	}{
		{store.ListOptions{}, []string{"zeta", "pre", "epoch", "a-tie", "b-tie", "c-tie", "aa-later", "fresh", "x", "y"}},
		{store.ListOptions{GPUType: "v100"}, []string{"zeta", "epoch", "b-tie", "c-tie", "aa-later", "fresh", "x"}},
		{store.ListOptions{GPUType: "k80"}, []string{"pre", "a-tie", "y"}},
		{store.ListOptions{Live: true}, []string{"zeta", "epoch", "b-tie", "fresh", "x", "y"}},
		{store.ListOptions{GPUType: "v100", Live: true}, []string{"zeta", "epoch", "b-tie", "fresh", "x"}},
		{store.ListOptions{GPUType: "k80", Live: true}, []string{"y"}},
		{store.ListOptions{GPUType: "a100"}, nil},
	}
	for _, c := range cases {
		wantNames(t, s, c.opts, c.want)
	}

	// The live filter follows the terminal transitions SaveStatus writes;
	// a terminal job is never revived.
	done := store.JobStatus{State: model.JobState{Status: model.StatusCompleted}}
	failed := store.JobStatus{State: model.JobState{Status: model.StatusFailed}}
	mustSave(t, s, map[string]store.JobStatus{"x": done, "y": failed})
	revived := store.JobStatus{State: model.JobState{Status: model.StatusWaiting}}
	wantSave(t, s, map[string]store.StatusWrite{"pre": {Status: revived}}, store.SaveResult{Conflicts: []string{"pre"}})
	wantNames(t, s, store.ListOptions{Live: true}, []string{"zeta", "epoch", "b-tie", "fresh"})
	wantNames(t, s, store.ListOptions{GPUType: "k80", Live: true}, nil)
	wantNames(t, s, store.ListOptions{GPUType: "k80"}, []string{"pre", "a-tie", "y"})
	wantNames(t, s, store.ListOptions{GPUType: "v100", Live: true}, []string{"zeta", "epoch", "b-tie", "fresh"})
}

// pageAll lists opts page by page, limit jobs a page, and returns the
// pages joined up. It fails the test if a page is longer than limit, or if
// the pages do not end.
func pageAll(t *testing.T, s store.Store, opts store.ListOptions, limit int) []store.Job {
	t.Helper()
	opts.Limit = limit
	var all []store.Job
	for range 1000 {
		page, err := s.ListJobs(t.Context(), opts)
		if err != nil {
			t.Fatalf("ListJobs(%+v): %v", opts, err)
		}
		if len(page) > limit {
			t.Errorf("ListJobs(%+v) returned %d jobs", opts, len(page))
		}
		all = append(all, page...)
		if len(page) < limit {
			return all
		}
		opts.After = page[len(page)-1].Position()
	}
	t.Fatalf("pages of %d of ListJobs(%+v) do not end", limit, opts)
	return nil
}

func names(jobs []store.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

// testPages checks ListJobs' Limit and After: pages of every size, with
// every filter, join up to the unpaged list, and After may be any
// position, a job's or not, out of the storable range too.
func testPages(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	// Few distinct times, so that most jobs tie on one and the name
	// decides; names scattered, so that creation order is neither.
	times := []time.Time{{}, time.Unix(0, 0), time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC), base, base.Add(1), base.Add(time.Hour)}
	statuses := []model.Status{model.StatusWaiting, model.StatusCompleted, model.StatusRunning, model.StatusCanceled, ""}
	var jobs []store.Job
	for i := range 20 {
		j := simpleJob(fmt.Sprintf("p%02d", i*7%20), []string{"v100", "k80"}[i%3%2], times[i%len(times)], statuses[i%len(statuses)])
		mustCreate(t, s, j)
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, byOrder)

	for _, opts := range []store.ListOptions{{}, {GPUType: "v100"}, {Live: true}, {GPUType: "k80", Live: true}} {
		var want []string
		for _, j := range jobs {
			if (opts.GPUType == "" || j.Spec.GPUType == opts.GPUType) && (!opts.Live || !j.Status.State.Status.Done()) {
				want = append(want, j.Name)
			}
		}
		wantNames(t, s, opts, want)
		// 1: every page full, the last followed by an empty one; 7: a
		// short last page.
		for _, limit := range []int{1, 7} {
			if diff := cmp.Diff(want, names(pageAll(t, s, opts, limit))); diff != "" {
				t.Errorf("pages of %d of ListJobs(%+v) (-want +got):\n%s", limit, opts, diff)
			}
		}
	}

	// After any position: a job's, or between, before or after them all.
	positions := []store.Position{
		{SubmitTime: base},
		{SubmitTime: base, Name: "zzz"},
		{SubmitTime: base.Add(30 * time.Minute), Name: "a"},
		{Name: "p15"},
		{Name: "zzz"},
		{SubmitTime: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), Name: "zzz"},
		{SubmitTime: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), Name: "zzz"}, // before the zero time
		{SubmitTime: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{SubmitTime: base.In(ist()), Name: "p05"},
	}
	for i := 0; i < len(jobs); i += 3 {
		positions = append(positions, jobs[i].Position())
	}
	for _, p := range positions {
		var want []string
		for _, j := range jobs {
			if byOrder(j, store.Job{Name: p.Name, Spec: model.JobSpec{SubmitTime: p.SubmitTime}}) > 0 {
				want = append(want, j.Name)
			}
		}
		wantNames(t, s, store.ListOptions{After: p}, want)
		wantNames(t, s, store.ListOptions{After: p, Limit: 3}, want[:min(3, len(want))])
	}

	if _, err := s.ListJobs(ctx, store.ListOptions{Limit: -1}); err == nil {
		t.Error("ListJobs with a negative limit: no error")
	}

	// Jobs created between two pages: the next page lists those that
	// come after the position, as it would have listed them before.
	first, err := s.ListJobs(ctx, store.ListOptions{Limit: 8})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	mustCreate(t, s, simpleJob("a-early", "v100", time.Time{}, model.StatusWaiting))
	mustCreate(t, s, simpleJob("z-late", "v100", base.Add(2*time.Hour), model.StatusWaiting))
	rest := pageAll(t, s, store.ListOptions{After: first[len(first)-1].Position()}, 4)
	if diff := cmp.Diff(append(names(jobs[8:]), "z-late"), names(rest)); diff != "" {
		t.Errorf("pages after jobs were created (-want +got):\n%s", diff)
	}
}

// testFinished checks ListFinished, CountJobs and DeleteFinished, and that
// the writes that change a job's liveness keep them right.
func testFinished(t *testing.T, f Factory) {
	ctx := t.Context()
	s, reopen := newStore(t, f)
	t0 := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	job := func(name, gpuType string, status model.Status, finish time.Time) store.Job {
		j := simpleJob(name, gpuType, t0, status)
		j.Status.FinishTime = finish
		return j
	}
	for _, j := range []store.Job{
		job("live-w", "v100", model.StatusWaiting, time.Time{}),
		job("live-r", "v100", model.StatusRunning, time.Time{}),
		job("live-s", "k80", model.StatusSubmitted, time.Time{}),
		job("live-0", "v100", "", time.Time{}),
		job("f-c", "v100", model.StatusCompleted, t0.Add(2*time.Hour)),
		job("f-f", "k80", model.StatusFailed, t0.Add(time.Hour)),
		job("f-x", "v100", model.StatusCanceled, time.Time{}), // created terminal: no finish time
		job("f-b", "v100", model.StatusCompleted, t0.Add(time.Hour).In(ist())),
		job("f-a", "v100", model.StatusCanceled, t0.Add(3*time.Hour)),
	} {
		mustCreate(t, s, j)
	}
	wantCounts(t, s, "created", 4, 5)
	all := []store.FinishedJob{
		{Name: "f-x"}, {Name: "f-b", FinishTime: t0.Add(time.Hour)}, {Name: "f-f", FinishTime: t0.Add(time.Hour)},
		{Name: "f-c", FinishTime: t0.Add(2 * time.Hour)}, {Name: "f-a", FinishTime: t0.Add(3 * time.Hour)},
	}
	wantFinished(t, s, "created", all)
	if got, err := s.ListFinished(ctx, 2); err != nil || !cmp.Equal(all[:2], got) {
		t.Errorf("ListFinished(2) = %+v, %v; want %+v", got, err, all[:2])
	}
	for _, limit := range []int{0, -1} {
		if _, err := s.ListFinished(ctx, limit); err == nil {
			t.Errorf("ListFinished(%d): no error", limit)
		}
	}

	// A job's end and SetAside move it to the finished jobs.
	mustSave(t, s, map[string]store.JobStatus{
		"live-r": {State: model.JobState{Status: model.StatusCompleted}, FinishTime: t0.Add(90 * time.Minute)},
	})
	if err := s.SetAside(ctx, "live-w", "test", t0.Add(30*time.Minute)); err != nil {
		t.Fatalf("SetAside: %v", err)
	}
	wantCounts(t, s, "after a job's end and SetAside", 2, 7)
	all = slices.Insert(all, 3, store.FinishedJob{Name: "live-r", FinishTime: t0.Add(90 * time.Minute)})
	all = slices.Insert(all, 1, store.FinishedJob{Name: "live-w", FinishTime: t0.Add(30 * time.Minute)})
	wantFinished(t, s, "after a job's end and SetAside", all)
	wantNames(t, s, store.ListOptions{Live: true}, []string{"live-0", "live-s"})

	// DeleteFinished deletes the terminal jobs named, with their
	// progress, and leaves live and missing ones alone.
	mustSaveProgress(t, s, "f-c", []byte(`{"steps":9}`), 0)
	liveS := mustGet(t, s, "live-s")
	n, err := s.DeleteFinished(ctx, []string{"f-c", "live-s", "missing", "f-x", "f-c"})
	if err != nil || n != 2 {
		t.Errorf("DeleteFinished = %d, %v; want 2 deleted", n, err)
	}
	for _, name := range []string{"f-c", "f-x", "missing"} {
		wantErrIs(t, "GetJob after DeleteFinished", getErr(s, ctx, name), store.ErrNotFound)
	}
	checkJob(t, s, "live job named to DeleteFinished", liveS)
	wantCounts(t, s, "after DeleteFinished", 2, 5)
	all = slices.DeleteFunc(all, func(j store.FinishedJob) bool { return j.Name == "f-c" || j.Name == "f-x" })
	wantFinished(t, s, "after DeleteFinished", all)
	wantNames(t, s, store.ListOptions{}, []string{"f-a", "f-b", "f-f", "live-0", "live-r", "live-s", "live-w"})
	mustCreate(t, s, job("f-c", "k80", model.StatusWaiting, time.Time{}))
	if j := mustGet(t, s, "f-c"); j.Progress != nil || j.ProgressRevision != 0 {
		t.Errorf("a job created again after DeleteFinished has progress %q at revision %d", j.Progress, j.ProgressRevision)
	}
	wantCounts(t, s, "after creating a deleted name again", 3, 5)

	if n, err := s.DeleteFinished(ctx, nil); err != nil || n != 0 {
		t.Errorf("DeleteFinished(nil) = %d, %v", n, err)
	}
	tooMany := make([]string, store.MaxDeleteFinished+1)
	for i := range tooMany {
		tooMany[i] = "f-b"
	}
	if _, err := s.DeleteFinished(ctx, tooMany); err == nil {
		t.Errorf("DeleteFinished of %d names: no error", len(tooMany))
	}
	wantCounts(t, s, "after a refused DeleteFinished", 3, 5)

	// DeleteJob keeps the index too, whatever the status; a name deleted
	// and created again is listed once, where its new record puts it.
	for _, name := range []string{"f-a", "live-0", "live-s"} {
		if err := s.DeleteJob(ctx, name); err != nil {
			t.Fatalf("DeleteJob %s: %v", name, err)
		}
	}
	wantCounts(t, s, "after DeleteJob", 1, 4)
	mustCreate(t, s, job("live-s", "v100", model.StatusFailed, t0.Add(-time.Hour)))
	wantNames(t, s, store.ListOptions{Live: true}, []string{"f-c"})
	wantNames(t, s, store.ListOptions{GPUType: "k80"}, []string{"f-c", "f-f"})
	all = append([]store.FinishedJob{{Name: "live-s", FinishTime: t0.Add(-time.Hour)}}, all[:len(all)-1]...)
	wantFinished(t, s, "after DeleteJob and creating again", all)

	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = reopen()
	wantCounts(t, s, "after reopen", 1, 5)
	wantFinished(t, s, "after reopen", all)
}

// wantCounts fails unless CountJobs returns live and finished.
func wantCounts(t *testing.T, s store.Store, what string, live, finished int) {
	t.Helper()
	l, f, err := s.CountJobs(t.Context())
	if err != nil || l != live || f != finished {
		t.Errorf("%s: CountJobs = %d live, %d finished, %v; want %d, %d", what, l, f, err, live, finished)
	}
}

// wantFinished fails unless ListFinished returns want.
func wantFinished(t *testing.T, s store.Store, what string, want []store.FinishedJob) {
	t.Helper()
	got, err := s.ListFinished(t.Context(), 1000)
	if err != nil {
		t.Fatalf("%s: ListFinished: %v", what, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: ListFinished (-want +got):\n%s", what, diff)
	}
	checkUTC(t, what, reflect.ValueOf(got))
}

func testOwnedFields(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	want := fullJob("owned")
	want.DeleteRequested = false
	mustCreate(t, s, want)

	if err := s.SetPriority(ctx, "owned", 7); err != nil {
		t.Fatalf("SetPriority: %v", err)
	}
	want.Spec.Priority = 7
	checkJob(t, s, "after SetPriority", want)

	// Progress is the API's too, written apart from the rest: the writes
	// below must keep it, and it must keep them.
	mustSaveProgress(t, s, "owned", []byte(`{"steps":1}`), want.ProgressRevision)
	want.Progress = []byte(`{"steps":1}`)
	want.ProgressRevision++
	checkJob(t, s, "after SaveProgress", want)

	if err := s.RequestDelete(ctx, "owned"); err != nil {
		t.Fatalf("RequestDelete: %v", err)
	}
	want.DeleteRequested = true
	checkJob(t, s, "after RequestDelete", want)

	st := store.JobStatus{
		State:    model.JobState{Status: model.StatusWaiting, Queue: 1, WaitingSince: time.Unix(100, 5)},
		Progress: 0.9,
	}
	mustSave(t, s, map[string]store.JobStatus{"owned": st})
	want.Status = st
	want.StatusRevision++
	checkJob(t, s, "after SaveStatus", want)

	if err := s.SetPriority(ctx, "owned", 0); err != nil {
		t.Fatalf("SetPriority: %v", err)
	}
	want.Spec.Priority = 0
	checkJob(t, s, "after SetPriority to 0", want)

	if err := s.SetAside(ctx, "owned", "test", time.Unix(200, 0)); err != nil {
		t.Fatalf("SetAside: %v", err)
	}
	want = mustGet(t, s, "owned")
	if !bytes.Equal(want.Progress, []byte(`{"steps":1}`)) || want.ProgressRevision != 4 {
		t.Errorf("after SetAside: progress %q at revision %d, want {\"steps\":1} at 4", want.Progress, want.ProgressRevision)
	}
	// The store does not look at the status: a finished job's last
	// report is written like any other.
	mustSaveProgress(t, s, "owned", nil, want.ProgressRevision)
	want.Progress = nil
	want.ProgressRevision++
	checkJob(t, s, "after SaveProgress of nil over a Failed job", want)
}

// mustSaveProgress calls SaveProgress and fails unless it writes.
func mustSaveProgress(t *testing.T, s store.Store, name string, data []byte, revision int64) {
	t.Helper()
	rev, err := s.SaveProgress(t.Context(), name, data, revision)
	if err != nil {
		t.Fatalf("SaveProgress %s at revision %d: %v", name, revision, err)
	}
	if rev != revision+1 {
		t.Errorf("SaveProgress %s at revision %d returned revision %d, want %d", name, revision, rev, revision+1)
	}
}

// testOwnedFieldsConcurrent interleaves the API's and the scheduler's
// writes to one job: a store that rewrites whole records from a stale
// read loses one side's update. Each writer owns its field, so it checks
// after every write that its field holds what it last wrote, and the end
// state must hold every writer's last write.
func testOwnedFieldsConcurrent(t *testing.T, f Factory) {
	s, _ := newStore(t, f)
	want := fullJob("busy")
	want.DeleteRequested = false
	mustCreate(t, s, want)
	const n = 40
	statusAt := func(i int) store.JobStatus {
		st := want.Status
		st.Progress = float64(i) / n
		st.QueuePosition = i
		return st
	}
	rev := want.StatusRevision           // the status writer's copy
	progressRev := want.ProgressRevision // the progress writer's
	progressAt := func(i int) []byte { return fmt.Appendf(nil, `{"steps":%d}`, i) }
	writers := []func(ctx context.Context, i int) error{
		func(ctx context.Context, i int) error { return s.SetPriority(ctx, "busy", i) },
		func(ctx context.Context, i int) error {
			res, err := s.SaveStatus(ctx, map[string]store.StatusWrite{"busy": {Status: statusAt(i), Revision: rev}})
			if err == nil && (res.Missing != nil || res.Conflicts != nil) {
				err = fmt.Errorf("SaveStatus at revision %d: %+v", rev, res)
			}
			rev++
			return err
		},
		func(ctx context.Context, i int) error {
			if i%4 != 3 {
				return nil
			}
			return s.RequestDelete(ctx, "busy")
		},
		func(ctx context.Context, i int) error {
			got, err := s.SaveProgress(ctx, "busy", progressAt(i), progressRev)
			if err == nil && got != progressRev+1 {
				err = fmt.Errorf("SaveProgress at revision %d returned %d", progressRev, got)
			}
			progressRev++
			return err
		},
	}
	owned := []func(j store.Job, i int) bool{
		func(j store.Job, i int) bool { return j.Spec.Priority == i },
		func(j store.Job, i int) bool { return j.Status.QueuePosition == i },
		func(j store.Job, i int) bool { return i < 3 || j.DeleteRequested },
		func(j store.Job, i int) bool {
			return bytes.Equal(j.Progress, progressAt(i)) && j.ProgressRevision == want.ProgressRevision+int64(i)+1
		},
	}
	race(t, n, len(writers), func(w, i int) error {
		if err := writers[w](t.Context(), i); err != nil {
			return err
		}
		j, err := s.GetJob(t.Context(), "busy")
		if err == nil && !owned[w](j, i) {
			err = fmt.Errorf("another writer undid write %d: got %+v", i, j)
		}
		return err
	})
	want.Spec.Priority = n - 1
	want.DeleteRequested = true
	want.Status = statusAt(n - 1)
	want.StatusRevision += n
	want.Progress = progressAt(n - 1)
	want.ProgressRevision += n
	checkJob(t, s, "after concurrent writes", want)
}

// race runs writers goroutines, each calling fn(writer, i) for i in
// [0, n), released together to maximise overlap; a writer stops at its
// first error.
func race(t *testing.T, n, writers int, fn func(w, i int) error) {
	t.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range n {
				if err := fn(w, i); err != nil {
					t.Errorf("writer %d, write %d: %v", w, i, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
}

func testSaveStatusMissing(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	a := simpleJob("a", "v100", time.Unix(1, 0), model.StatusWaiting)
	b := simpleJob("b", "v100", time.Unix(2, 0), model.StatusWaiting)
	mustCreate(t, s, a)
	mustCreate(t, s, b)

	run := store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 1}, Updated: time.Unix(3, 0)}
	w := store.StatusWrite{Status: run}
	wantSave(t, s, map[string]store.StatusWrite{"a": w, "zz-gone": w, "b": w, "m-gone": w},
		store.SaveResult{Missing: []string{"m-gone", "zz-gone"}})
	a.Status, b.Status = run, run
	a.StatusRevision, b.StatusRevision = 1, 1
	checkJob(t, s, "a", a)
	checkJob(t, s, "b", b)
	wantErrIs(t, "GetJob of a missing job SaveStatus skipped", getErr(s, ctx, "m-gone"), store.ErrNotFound)

	for _, in := range []map[string]store.StatusWrite{nil, {}} {
		res, err := s.SaveStatus(ctx, in)
		if err != nil || res.Missing != nil || res.Conflicts != nil {
			t.Errorf("SaveStatus(%v) = %+v, %v; want nothing reported, no error", in, res, err)
		}
	}
	wantNames(t, s, store.ListOptions{}, []string{"a", "b"})
}

// testSaveStatusRevisions checks a write is made only over the revision
// its writer read, and that each write made adds one to the revision.
func testSaveStatusRevisions(t *testing.T, f Factory) {
	s, reopen := newStore(t, f)
	j, given := createRevisionPair(t, s, func(j *store.Job) { j.StatusRevision = 5 })

	statusAt := func(i int) store.JobStatus {
		st := store.JobStatus{State: model.JobState{Status: model.StatusWaiting}, QueuePosition: i + 1}
		if i%2 == 1 {
			st = store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 1}}
		}
		st.Updated = time.Unix(int64(10+i), 0)
		return st
	}
	for i := range 3 {
		wantSave(t, s, map[string]store.StatusWrite{"j": {Status: statusAt(i), Revision: int64(i)}}, store.SaveResult{})
		j.Status, j.StatusRevision = statusAt(i), int64(i+1)
		checkJob(t, s, fmt.Sprintf("after write %d", i), j)
	}
	// Stale revisions, and ones ahead of the stored one, change nothing.
	for _, rev := range []int64{0, 2, 4, -1} {
		wantSave(t, s, map[string]store.StatusWrite{"j": {Status: statusAt(99), Revision: rev}},
			store.SaveResult{Conflicts: []string{"j"}})
		checkJob(t, s, fmt.Sprintf("after a write at revision %d", rev), j)
	}

	// The revision CreateJob stored is the base of the first write.
	wantSave(t, s, map[string]store.StatusWrite{"given": {Status: statusAt(0)}}, store.SaveResult{Conflicts: []string{"given"}})
	wantSave(t, s, map[string]store.StatusWrite{"given": {Status: statusAt(0), Revision: 5}}, store.SaveResult{})
	given.Status, given.StatusRevision = statusAt(0), 6

	// One call: a write made, a stale one, a missing job.
	wantSave(t, s, map[string]store.StatusWrite{
		"j":     {Status: statusAt(3), Revision: 3},
		"given": {Status: statusAt(1), Revision: 5},
		"gone":  {Status: statusAt(1)},
	}, store.SaveResult{Missing: []string{"gone"}, Conflicts: []string{"given"}})
	j.Status, j.StatusRevision = statusAt(3), 4
	checkJob(t, s, "after a mixed call", j)
	checkJob(t, s, "after a mixed call", given)
	checkListedAndReopen(t, s, reopen, j, given)
}

// createRevisionPair creates the jobs "j" and "given", Waiting and
// submitted in that order, given with the revisions set sets, and checks
// both read back as created.
func createRevisionPair(t *testing.T, s store.Store, set func(*store.Job)) (store.Job, store.Job) {
	t.Helper()
	j := simpleJob("j", "v100", time.Unix(1, 0), model.StatusWaiting)
	given := simpleJob("given", "v100", time.Unix(2, 0), model.StatusWaiting)
	set(&given)
	mustCreate(t, s, j)
	mustCreate(t, s, given)
	checkJob(t, s, "created", j)
	checkJob(t, s, "created with a revision", given)
	return j, given
}

// checkListedAndReopen checks ListJobs returns want, closes s, and checks
// each of want on a store reopened on the same storage, which it returns.
func checkListedAndReopen(t *testing.T, s store.Store, reopen func() store.Store, want ...store.Job) store.Store {
	t.Helper()
	list, err := s.ListJobs(t.Context(), store.ListOptions{})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("ListJobs (-want +got):\n%s", diff)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = reopen()
	for _, j := range want {
		checkJob(t, s, "after reopen", j)
	}
	return s
}

// testSaveStatusTerminal checks a terminal status is final: no write
// replaces it, whatever its revision, so a resync from a stale copy cannot
// revive a finished job.
func testSaveStatusTerminal(t *testing.T, f Factory) {
	s, _ := newStore(t, f)
	run := simpleJob("run", "v100", time.Unix(1, 0), model.StatusRunning)
	born := simpleJob("born-done", "v100", time.Unix(2, 0), model.StatusCanceled)
	mustCreate(t, s, run)
	mustCreate(t, s, born)

	completed := store.JobStatus{
		State:      model.JobState{Status: model.StatusCompleted},
		FinishTime: time.Unix(50, 0), Updated: time.Unix(50, 0),
	}
	wantSave(t, s, map[string]store.StatusWrite{"run": {Status: completed}}, store.SaveResult{})
	run.Status, run.StatusRevision = completed, 1
	checkJob(t, s, "after completing", run)
	wantNames(t, s, store.ListOptions{Live: true}, nil)

	for _, st := range []model.Status{model.StatusRunning, model.StatusWaiting, model.StatusSubmitted, "",
		model.StatusFailed, model.StatusCanceled, model.StatusCompleted} {
		for _, rev := range []int64{0, 1, 2} {
			w := store.StatusWrite{Status: store.JobStatus{State: model.JobState{Status: st}}, Revision: rev}
			wantSave(t, s, map[string]store.StatusWrite{"run": w, "born-done": w},
				store.SaveResult{Conflicts: []string{"born-done", "run"}})
		}
	}
	checkJob(t, s, "after writes over a terminal status", run)
	checkJob(t, s, "after writes over a status terminal from creation", born)
	wantNames(t, s, store.ListOptions{Live: true}, nil)
}

// together runs fn(w) for w in [0, n) in goroutines released together,
// to maximise overlap, and waits for them.
func together(n int, fn func(w int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			<-start
			fn(w)
		})
	}
	close(start)
	wg.Wait()
}

// testSaveStatusRace races writers that read the same revision, as two
// schedulers would when one has lost its leadership without knowing:
// exactly one write per job and revision is made.
func testSaveStatusRace(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	mustCreate(t, s, simpleJob("a", "v100", time.Unix(1, 0), model.StatusWaiting))
	mustCreate(t, s, simpleJob("b", "v100", time.Unix(2, 0), model.StatusWaiting))
	const writers, rounds = 8, 4
	for round := range int64(rounds) {
		results := make([]store.SaveResult, writers)
		errs := make([]error, writers)
		together(writers, func(w int) {
			st := store.JobStatus{State: model.JobState{Status: model.StatusRunning}, QueuePosition: w + 1}
			results[w], errs[w] = s.SaveStatus(ctx, map[string]store.StatusWrite{
				"a": {Status: st, Revision: round},
				"b": {Status: st, Revision: round},
			})
		})
		for w, err := range errs {
			if err != nil || results[w].Missing != nil {
				t.Fatalf("round %d, writer %d: SaveStatus = %+v, %v", round, w, results[w], err)
			}
		}
		for _, name := range []string{"a", "b"} {
			var winners []int
			for w, res := range results {
				if !slices.Contains(res.Conflicts, name) {
					winners = append(winners, w)
				}
			}
			if len(winners) != 1 {
				t.Fatalf("round %d, job %s: writers %v made their writes, want exactly one", round, name, winners)
			}
			got := mustGet(t, s, name)
			if got.StatusRevision != round+1 || got.Status.QueuePosition != winners[0]+1 {
				t.Errorf("round %d, job %s: revision %d, queue position %d; want %d and the winner's %d",
					round, name, got.StatusRevision, got.Status.QueuePosition, round+1, winners[0]+1)
			}
		}
	}
}

// testProgress checks SaveProgress: the round trip, the revision sequence,
// stale revisions, missing jobs, and that what it stores survives a
// reopen.
func testProgress(t *testing.T, f Factory) {
	ctx := t.Context()
	s, reopen := newStore(t, f)
	j, given := createRevisionPair(t, s, func(j *store.Job) { j.ProgressRevision = 5 })

	// 0 → 1 → 2; the store keeps its own copy of what it is given, and
	// returns copies.
	for i := range int64(2) {
		in := fmt.Appendf(nil, `{"generation":"g","steps":%d}`, 100*(i+1))
		mustSaveProgress(t, s, "j", in, i)
		j.Progress, j.ProgressRevision = bytes.Clone(in), i+1
		in[0] = 'X'
		checkJob(t, s, fmt.Sprintf("after progress write %d", i), j)
	}
	got := mustGet(t, s, "j")
	got.Progress[0] = 'Y'
	checkJob(t, s, "after changing a returned job's progress", j)

	// Stale revisions, and ones ahead of the stored one, write nothing.
	for _, rev := range []int64{0, 1, 3, -1} {
		n, err := s.SaveProgress(ctx, "j", []byte(`{"stale":true}`), rev)
		wantErrIs(t, fmt.Sprintf("SaveProgress at revision %d over revision 2", rev), err, store.ErrConflict)
		if n != 0 {
			t.Errorf("SaveProgress at revision %d that failed returned revision %d", rev, n)
		}
		checkJob(t, s, fmt.Sprintf("after a progress write at revision %d", rev), j)
	}

	// An empty report comes back nil, and still counts as a write.
	mustSaveProgress(t, s, "j", []byte{}, 2)
	j.Progress, j.ProgressRevision = nil, 3
	checkJob(t, s, "after an empty progress write", j)

	// The revision CreateJob stored is the base of the first write.
	_, err := s.SaveProgress(ctx, "given", []byte(`{}`), 0)
	wantErrIs(t, "SaveProgress at 0 of a job created at 5", err, store.ErrConflict)
	mustSaveProgress(t, s, "given", []byte(`{}`), 5)
	given.Progress, given.ProgressRevision = []byte(`{}`), 6

	_, err = s.SaveProgress(ctx, "nope", []byte(`{}`), 0)
	wantErrIs(t, "SaveProgress of a missing job", err, store.ErrNotFound)
	wantErrIs(t, "GetJob after SaveProgress of a missing job", getErr(s, ctx, "nope"), store.ErrNotFound)

	s = checkListedAndReopen(t, s, reopen, j, given)
	mustSaveProgress(t, s, "j", []byte(`{"after":"reopen"}`), 3)
}

// testProgressLimit checks that progress and histories longer than
// store.MaxProgressBytes are refused, naming the limit, before anything is
// written, and that the limit itself is accepted.
func testProgressLimit(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	j := simpleJob("j", "v100", time.Unix(1, 0), model.StatusRunning)
	mustCreate(t, s, j)
	limit := fmt.Sprint(store.MaxProgressBytes)
	over := bytes.Repeat([]byte("x"), store.MaxProgressBytes+1)
	wantLimit := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), limit) {
			t.Errorf("%s of %d bytes: error %v, want one naming the limit %s", what, len(over), err, limit)
		}
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of %d bytes: error %v matches a sentinel", what, len(over), err)
		}
	}

	_, err := s.SaveProgress(ctx, "j", over, 0)
	wantLimit("SaveProgress", err)
	checkJob(t, s, "after a refused SaveProgress", j)
	_, err = s.SaveProgress(ctx, "nope", over, 0)
	wantLimit("SaveProgress of a missing job", err)

	big := simpleJob("big", "v100", time.Unix(2, 0), "")
	big.Progress = over
	wantLimit("CreateJob with progress", s.CreateJob(ctx, big))
	wantErrIs(t, "GetJob after a refused CreateJob", getErr(s, ctx, "big"), store.ErrNotFound)

	wantLimit("SaveHistory", s.SaveHistory(ctx, "v100", "app", over))
	if h, err := s.ListHistories(ctx, "v100"); err != nil || h != nil {
		t.Errorf("ListHistories after a refused SaveHistory = %v, %v; want nil", h, err)
	}

	full := over[:store.MaxProgressBytes]
	mustSaveProgress(t, s, "j", full, 0)
	j.Progress, j.ProgressRevision = full, 1
	checkJob(t, s, "after SaveProgress of the limit", j)
	if err := s.SaveHistory(ctx, "v100", "app", full); err != nil {
		t.Errorf("SaveHistory of the limit: %v", err)
	}
	checkHistories(t, s, "v100", map[string][]byte{"app": full})
}

// testProgressRace races progress writers that read the same revision, as
// two reports of one job handled at once would: exactly one write per
// revision is made, and the others are conflicts.
func testProgressRace(t *testing.T, f Factory) {
	s, _ := newStore(t, f)
	mustCreate(t, s, simpleJob("a", "v100", time.Unix(1, 0), model.StatusRunning))
	const writers, rounds = 8, 4
	for round := range int64(rounds) {
		errs := make([]error, writers)
		revs := make([]int64, writers)
		together(writers, func(w int) {
			revs[w], errs[w] = s.SaveProgress(t.Context(), "a", fmt.Appendf(nil, `{"writer":%d}`, w), round)
		})
		var winners []int
		for w, err := range errs {
			switch {
			case err == nil:
				winners = append(winners, w)
				if revs[w] != round+1 {
					t.Errorf("round %d, writer %d: revision %d, want %d", round, w, revs[w], round+1)
				}
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("round %d, writer %d: %v, want nil or ErrConflict", round, w, err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: writers %v made their writes, want exactly one", round, winners)
		}
		got := mustGet(t, s, "a")
		if want := fmt.Appendf(nil, `{"writer":%d}`, winners[0]); got.ProgressRevision != round+1 || !bytes.Equal(got.Progress, want) {
			t.Errorf("round %d: progress %q at revision %d; want the winner's %q at %d",
				round, got.Progress, got.ProgressRevision, want, round+1)
		}
	}
}

// testHistories checks SaveHistory and ListHistories: the round trip,
// replacement, each GPU type seeing only its own, the empty application,
// and GPU types and applications that look like each other's keys.
func testHistories(t *testing.T, f Factory) {
	ctx := t.Context()
	s, reopen := newStore(t, f)
	checkHistories(t, s, "v100", nil)
	for _, err := range []error{s.SaveHistory(ctx, "", "app", []byte(`{}`)), func() error {
		_, err := s.ListHistories(ctx, "")
		return err
	}()} {
		if err == nil {
			t.Error("history call with an empty GPU type: no error")
		}
	}

	in := []byte(`{"resnet50":{"1":10.5,"2":20.1}}`)
	want := map[string][]byte{"resnet50": bytes.Clone(in)}
	mustSaveHistory(t, s, "v100", "resnet50", in)
	in[0] = 'X' // the store keeps its own copy
	checkHistories(t, s, "v100", want)
	got, err := s.ListHistories(ctx, "v100")
	if err != nil {
		t.Fatalf("ListHistories: %v", err)
	}
	got["resnet50"][0] = 'Y'
	checkHistories(t, s, "v100", want)

	// Replaced whole; the empty application is one like the others; an
	// empty history comes back nil.
	mustSaveHistory(t, s, "v100", "resnet50", []byte(`{"v":2}`))
	mustSaveHistory(t, s, "v100", "", []byte(`{"anonymous":true}`))
	mustSaveHistory(t, s, "v100", "bert", []byte{})
	want = map[string][]byte{"resnet50": []byte(`{"v":2}`), "": []byte(`{"anonymous":true}`), "bert": nil}
	checkHistories(t, s, "v100", want)

	// Other GPU types, some named like prefixes or keys of others.
	others := map[string]map[string][]byte{
		"k80":     {"resnet50": []byte(`{"k80":1}`)},
		"v10":     {"0/resnet50": []byte(`{"v10":1}`)},
		"v100/a":  {"b": []byte(`{"v100/a":1}`)},
		"v100%2F": {"": []byte(`{"escaped":1}`)},
		"a100":    nil,
	}
	for _, gpuType := range slices.Sorted(maps.Keys(others)) {
		for app, data := range others[gpuType] {
			mustSaveHistory(t, s, gpuType, app, data)
		}
	}
	checkHistories(t, s, "v100", want)
	for gpuType, h := range others {
		checkHistories(t, s, gpuType, h)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = reopen()
	checkHistories(t, s, "v100", want)
	for gpuType, h := range others {
		checkHistories(t, s, gpuType, h)
	}
}

func mustSaveHistory(t *testing.T, s store.Store, gpuType, app string, data []byte) {
	t.Helper()
	if err := s.SaveHistory(t.Context(), gpuType, app, data); err != nil {
		t.Fatalf("SaveHistory %s %q: %v", gpuType, app, err)
	}
}

func checkHistories(t *testing.T, s store.Store, gpuType string, want map[string][]byte) {
	t.Helper()
	got, err := s.ListHistories(t.Context(), gpuType)
	if err != nil {
		t.Fatalf("ListHistories %s: %v", gpuType, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListHistories %s (-want +got):\n%s", gpuType, diff)
	}
}

// testSetAside checks SetAside on readable records: a live job becomes
// Failed with the reason, keeping what it had; a terminal one stays.
func testSetAside(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	held := fullJob("held")
	held.DeleteRequested = false
	done := simpleJob("done", "v100", time.Unix(1, 0), model.StatusCompleted)
	far := simpleJob("far", "v100", time.Unix(2, 0), model.StatusWaiting)
	for _, j := range []store.Job{held, done, far} {
		mustCreate(t, s, j)
	}

	now := time.Date(2025, 2, 3, 4, 5, 6, 7, ist())
	const reason = "its placement names node-z, which no cluster has"
	if err := s.SetAside(ctx, "held", reason, now); err != nil {
		t.Fatalf("SetAside: %v", err)
	}
	want := held
	want.Status.State.Status = model.StatusFailed
	want.Status.State.PrevGPUs = held.Status.State.GPUs
	want.Status.State.GPUs = 0
	want.Status.State.Placement = nil
	want.Status.State.LastChange = now
	want.Status.Allocations = append(slices.Clone(held.Status.Allocations), store.Allocation{At: now.UTC()})
	want.Status.QueuePosition = 0
	want.Status.EstimatedStart = time.Time{}
	want.Status.FinishTime = now
	want.Status.Updated = now
	want.Status.Reason = store.ReasonUnrestorable
	want.Status.Message = reason
	want.StatusRevision = held.StatusRevision + 1
	checkJob(t, s, "after SetAside", want)
	wantNames(t, s, store.ListOptions{Live: true}, []string{"far"})

	// A job set aside is Failed, so final: neither a second SetAside nor
	// a status write changes it.
	if err := s.SetAside(ctx, "held", "again", now.Add(time.Hour)); err != nil {
		t.Fatalf("second SetAside: %v", err)
	}
	wantSave(t, s, map[string]store.StatusWrite{"held": {Status: held.Status, Revision: want.StatusRevision}},
		store.SaveResult{Conflicts: []string{"held"}})
	checkJob(t, s, "after a second SetAside and a status write", want)

	if err := s.SetAside(ctx, "done", reason, now); err != nil {
		t.Fatalf("SetAside of a completed job: %v", err)
	}
	checkJob(t, s, "completed job after SetAside", done)
	wantErrIs(t, "SetAside of a missing job", s.SetAside(ctx, "nope", reason, now), store.ErrNotFound)
	wantErrIs(t, "GetJob after SetAside of a missing job", getErr(s, ctx, "nope"), store.ErrNotFound)

	if err := s.SetAside(ctx, "far", reason, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Error("SetAside with a time in 3000: no error")
	}
	checkJob(t, s, "after a rejected SetAside", far)
}

// testUnreadable checks that records a store cannot decode are listed and
// returned, marked, with what can still be read of them, rather than
// failing the calls, and that SetAside turns them into Failed jobs.
func testUnreadable(t *testing.T, f Factory) {
	ctx := t.Context()
	s, reopen, damager := newStorage(t, f)
	if damager == nil {
		t.Skip("no Damager for this store")
	}
	a := simpleJob("a", "v100", time.Unix(1, 0), model.StatusWaiting)
	b := simpleJob("b", "k80", time.Unix(2, 0), model.StatusRunning)
	c := simpleJob("c", "v100", time.Unix(3, 0), model.StatusCompleted)
	for _, j := range []store.Job{a, b, c} {
		mustCreate(t, s, j)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// dmg-run's submit time places it between a and b.
	damage := map[string]Damage{
		"dmg-run":  {GPUType: "v100", Status: model.StatusRunning, StatusRevision: 3, SubmitTime: time.Unix(1, 500)},
		"dmg-none": {},
		"dmg-done": {GPUType: "k80", Status: model.StatusCompleted},
	}
	originals := make(map[string][]byte)
	for _, name := range slices.Sorted(maps.Keys(damage)) {
		raw, err := damager.DamageJob(ctx, name, damage[name])
		if err != nil {
			t.Fatalf("DamageJob %s: %v", name, err)
		}
		originals[name] = raw
	}
	s = reopen()

	partial := func(name string) store.Job {
		d := damage[name]
		return store.Job{
			Name:   name,
			Spec:   model.JobSpec{Name: name, GPUType: d.GPUType, SubmitTime: d.SubmitTime},
			Status: store.JobStatus{State: model.JobState{Status: d.Status}},
		}
	}
	run, none, done := partial("dmg-run"), partial("dmg-none"), partial("dmg-done")
	cases := []struct {
		opts store.ListOptions
		want []store.Job
	}{
		{store.ListOptions{}, []store.Job{done, none, a, run, b, c}},
		{store.ListOptions{GPUType: "v100"}, []store.Job{none, a, run, c}},
		{store.ListOptions{GPUType: "k80"}, []store.Job{done, none, b}},
		{store.ListOptions{GPUType: "a100"}, []store.Job{none}},
		{store.ListOptions{Live: true}, []store.Job{none, a, run, b}},
		{store.ListOptions{GPUType: "v100", Live: true}, []store.Job{none, a, run}},
		{store.ListOptions{GPUType: "k80", Live: true}, []store.Job{none, b}},
	}
	for _, tc := range cases {
		list, err := s.ListJobs(ctx, tc.opts)
		if err != nil {
			t.Fatalf("ListJobs(%+v): %v", tc.opts, err)
		}
		checkJobs(t, fmt.Sprintf("ListJobs(%+v)", tc.opts), tc.want, list)
		// Pages of unreadable records join up as well: each is placed
		// where it is returned.
		for _, limit := range []int{1, 2} {
			checkJobs(t, fmt.Sprintf("pages of %d of ListJobs(%+v)", limit, tc.opts), tc.want, pageAll(t, s, tc.opts, limit))
		}
	}
	// The unreadable records count by the status that could be read.
	wantCounts(t, s, "with unreadable records", 4, 2)
	wantFinished(t, s, "with unreadable records", []store.FinishedJob{{Name: "c"}, {Name: "dmg-done"}})
	for _, want := range []store.Job{run, none, done, a} {
		checkJobs(t, "GetJob "+want.Name, []store.Job{want}, []store.Job{mustGet(t, s, want.Name)})
	}

	// No status write is made over an unreadable record, whatever its
	// revision; a readable one in the same call is written.
	st := store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 1}}
	for _, rev := range []int64{0, 3} {
		wantSave(t, s, map[string]store.StatusWrite{
			"dmg-run": {Status: st, Revision: rev}, "dmg-none": {Status: st, Revision: rev},
			"a": {Status: st, Revision: a.StatusRevision},
		}, store.SaveResult{Conflicts: []string{"dmg-none", "dmg-run"}})
		a.Status = st
		a.StatusRevision++
		checkJob(t, s, "readable job written with unreadable ones", a)
	}
	for _, want := range []store.Job{run, none} {
		checkJobs(t, "GetJob after status writes", []store.Job{want}, []store.Job{mustGet(t, s, want.Name)})
	}

	// A progress write over an unreadable record is treated as
	// SetPriority treats it, which differs between stores (see
	// store.Store.SaveProgress); either way the record stays unreadable,
	// and SetAside keeps the revision it reached.
	runProgressRev := int64(0)
	if rev, err := s.SaveProgress(ctx, "dmg-run", []byte(`{"early":true}`), 0); err == nil {
		runProgressRev = rev
	} else if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
		t.Errorf("SaveProgress of an unreadable record at revision 0: %v", err)
	}
	checkJobs(t, "GetJob after a progress write", []store.Job{run}, []store.Job{mustGet(t, s, "dmg-run")})

	now := time.Date(2025, 6, 7, 8, 9, 10, 11, time.UTC)
	const reason = "record does not decode"
	for _, name := range []string{"dmg-run", "dmg-none", "dmg-done"} {
		if err := s.SetAside(ctx, name, reason, now); err != nil {
			t.Fatalf("SetAside %s: %v", name, err)
		}
	}
	aside := func(name string, rev int64) store.Job {
		return store.Job{
			Name: name,
			Spec: model.JobSpec{Name: name, GPUType: damage[name].GPUType, SubmitTime: damage[name].SubmitTime},
			Status: store.JobStatus{
				State:      model.JobState{Status: model.StatusFailed},
				FinishTime: now, Updated: now,
				Reason: store.ReasonUnrestorable, Message: reason,
			},
			StatusRevision: rev,
		}
	}
	runAside, noneAside := aside("dmg-run", 4), aside("dmg-none", 1)
	runAside.ProgressRevision = runProgressRev
	checkJob(t, s, "after SetAside", runAside)
	checkJob(t, s, "after SetAside", noneAside)
	// A record whose status reads as terminal is left as it is: the job
	// finished, and setting it aside would make it Failed.
	checkJobs(t, "GetJob of a terminal unreadable record after SetAside", []store.Job{done}, []store.Job{mustGet(t, s, "dmg-done")})
	if err := s.SetAside(ctx, "dmg-run", "again", now.Add(time.Hour)); err != nil {
		t.Fatalf("second SetAside: %v", err)
	}
	checkJob(t, s, "after a second SetAside", runAside)

	list, err := s.ListJobs(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	checkJobs(t, "ListJobs after SetAside", []store.Job{done, noneAside, a, runAside, b, c}, list)
	wantNames(t, s, store.ListOptions{Live: true}, []string{"a", "b"})
	wantCounts(t, s, "after SetAside", 2, 4)

	// The original record survives later writes of the replacement.
	if err := s.SetPriority(ctx, "dmg-run", 4); err != nil {
		t.Fatalf("SetPriority of a job set aside: %v", err)
	}
	runAside.Spec.Priority = 4
	// So does a progress write, taken like any other.
	mustSaveProgress(t, s, "dmg-run", []byte(`{"final":true}`), runProgressRev)
	runAside.Progress, runAside.ProgressRevision = []byte(`{"final":true}`), runProgressRev+1
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, name := range []string{"dmg-run", "dmg-none", "dmg-done", "a"} {
		got, err := damager.Original(ctx, name)
		if err != nil {
			t.Fatalf("Original %s: %v", name, err)
		}
		want := originals[name]
		if name == "dmg-done" {
			want = nil // never replaced
		}
		if name == "dmg-run" && runProgressRev != 0 {
			// The record as SetAside found it: the damaged one, with the
			// progress write in it.
			if !bytes.Contains(got, []byte("eight")) || !bytes.Contains(got, []byte(`{"early":true}`)) {
				t.Errorf("original record kept for %s = %q, want the damaged record with the progress write", name, got)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("original record kept for %s = %q, want %q", name, got, want)
		}
	}
	s = reopen()
	checkJob(t, s, "after reopen", runAside)
	checkJob(t, s, "after reopen", noneAside)

	// Retention takes the unreadable terminal record like any other.
	wantFinished(t, s, "after SetAside", []store.FinishedJob{
		{Name: "c"}, {Name: "dmg-done"}, {Name: "dmg-none", FinishTime: now}, {Name: "dmg-run", FinishTime: now},
	})
	if n, err := s.DeleteFinished(ctx, []string{"dmg-done", "dmg-run", "a"}); err != nil || n != 2 {
		t.Errorf("DeleteFinished = %d, %v; want 2 deleted", n, err)
	}
	wantNames(t, s, store.ListOptions{}, []string{"dmg-none", "a", "b", "c"})
	wantCounts(t, s, "after DeleteFinished", 2, 2)
}

// checkJobs compares jobs, and checks that Unreadable is set (to a reason)
// exactly on the jobs whose name starts with "dmg-" and whose want was not
// set aside (has no Status.Reason): testUnreadable's unreadable records.
func checkJobs(t *testing.T, what string, want, got []store.Job) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(store.Job{}, "Unreadable")); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
		return
	}
	for i, j := range got {
		unreadable := strings.HasPrefix(j.Name, "dmg-") && want[i].Status.Reason == ""
		if (j.Unreadable != "") != unreadable {
			t.Errorf("%s: job %s has Unreadable %q, want it set: %v", what, j.Name, j.Unreadable, unreadable)
		}
	}
}

func testDeleteJob(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	mustCreate(t, s, simpleJob("a", "v100", time.Unix(1, 0), model.StatusCompleted))
	mustCreate(t, s, simpleJob("b", "v100", time.Unix(2, 0), model.StatusWaiting))
	if err := s.DeleteJob(ctx, "a"); err != nil {
		t.Fatalf("DeleteJob: %v", err)
	}
	wantErrIs(t, "GetJob of a deleted job", getErr(s, ctx, "a"), store.ErrNotFound)
	wantErrIs(t, "DeleteJob twice", s.DeleteJob(ctx, "a"), store.ErrNotFound)
	wantNames(t, s, store.ListOptions{}, []string{"b"})
	// The name is free again once the record is gone.
	mustCreate(t, s, simpleJob("a", "v100", time.Unix(3, 0), ""))
	wantNames(t, s, store.ListOptions{}, []string{"b", "a"})
}

func testNotFound(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	mustCreate(t, s, simpleJob("other", "v100", time.Unix(1, 0), ""))
	wantErrIs(t, "GetJob", getErr(s, ctx, "nope"), store.ErrNotFound)
	wantErrIs(t, "SetPriority", s.SetPriority(ctx, "nope", 1), store.ErrNotFound)
	wantErrIs(t, "RequestDelete", s.RequestDelete(ctx, "nope"), store.ErrNotFound)
	wantErrIs(t, "DeleteJob", s.DeleteJob(ctx, "nope"), store.ErrNotFound)
	wantErrIs(t, "GetScheduler", schedErr(s, ctx, "nope"), store.ErrNotFound)
	// Updates of a missing job must not create it.
	wantErrIs(t, "GetJob after updates of a missing job", getErr(s, ctx, "nope"), store.ErrNotFound)
	wantNames(t, s, store.ListOptions{}, []string{"other"})
}

func testSchedulers(t *testing.T, f Factory) {
	ctx := t.Context()
	s, _ := newStore(t, f)
	if list, err := s.ListSchedulers(ctx); err != nil || len(list) != 0 {
		t.Errorf("ListSchedulers on an empty store = %v, %v; want none", list, err)
	}
	set1 := store.Settings{
		Algorithm: "tiresias",
		Params:    map[string]string{"thresholds.0": "3600", "$weird": "x", "plain": "1"},
		RateLimit: 1500 * time.Millisecond,
		Quotas: []model.Quota{
			{Team: "team-a", Guarantee: 8, Limit: 16, Weight: 2.5},
			{Team: "team-b", Guarantee: 1, Limit: 1, Weight: 0.125},
		},
	}
	st1 := store.SchedulerStatus{
		Now: time.Date(2024, 5, 6, 7, 8, 9, 10, ist()), LastCycle: time.Date(2024, 5, 6, 7, 8, 8, 999999999, ist()),
		Cycles: 1 << 40, Nodes: 4, GPUs: 32, GPUsInUse: 30, Waiting: 5, Running: 9,
		NodeStates: []store.NodeState{
			{Name: "node-a", GPUs: 8, Cordoned: true, NotReady: true},
			{Name: "node-b.example", GPUs: 4, Cordoned: true, NotReady: true},
		},
		Teams: []store.TeamState{
			{Team: "team-a", GPUs: 16, Entitled: 8, Demand: 32, Running: 2, Waiting: 1},
			{Team: "team-b", GPUs: 1, Entitled: 8, Demand: 9, Running: 1, Waiting: 3},
		},
	}
	checkAllSet(t, "Settings", reflect.ValueOf(set1))
	checkAllSet(t, "SchedulerStatus", reflect.ValueOf(st1))

	mustPutSettings(t, s, "v100", set1)
	checkScheduler(t, s, "settings only", store.Scheduler{GPUType: "v100", Settings: set1})
	mustPutStatus(t, s, "v100", st1)
	checkScheduler(t, s, "settings then status", store.Scheduler{GPUType: "v100", Settings: set1, Status: st1})
	set2 := store.Settings{Algorithm: "fifo", Params: map[string]string{}}
	mustPutSettings(t, s, "v100", set2)
	set2.Params = nil // empty maps come back nil
	checkScheduler(t, s, "settings replaced", store.Scheduler{GPUType: "v100", Settings: set2, Status: st1})

	st2 := store.SchedulerStatus{Now: time.Unix(0, 1), Cycles: 2, NodeStates: []store.NodeState{{Name: "ready", GPUs: 1}}}
	mustPutStatus(t, s, "k80", st2)
	checkScheduler(t, s, "status only", store.Scheduler{GPUType: "k80", Status: st2})
	mustPutSettings(t, s, "a100", set1)

	list, err := s.ListSchedulers(ctx)
	if err != nil {
		t.Fatalf("ListSchedulers: %v", err)
	}
	want := []store.Scheduler{
		{GPUType: "a100", Settings: set1},
		{GPUType: "k80", Status: st2},
		{GPUType: "v100", Settings: set2, Status: st1},
	}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("ListSchedulers (-want +got):\n%s", diff)
	}
	checkUTC(t, "ListSchedulers", reflect.ValueOf(list))
}

// testSchedulersConcurrent races the API's and the scheduler's writes to
// one record, starting from no record, so both may try to create it.
func testSchedulersConcurrent(t *testing.T, f Factory) {
	s, _ := newStore(t, f)
	const n = 40
	settingsAt := func(i int) store.Settings { return store.Settings{Algorithm: fmt.Sprint("alg-", i)} }
	statusAt := func(i int) store.SchedulerStatus { return store.SchedulerStatus{Cycles: int64(i)} }
	race(t, n, 2, func(w, i int) error {
		ctx := t.Context()
		var err error
		if w == 0 {
			err = s.PutSettings(ctx, "v100", settingsAt(i))
		} else {
			err = s.PutStatus(ctx, "v100", statusAt(i))
		}
		if err != nil {
			return err
		}
		got, err := s.GetScheduler(ctx, "v100")
		if err == nil && (w == 0 && got.Settings.Algorithm != settingsAt(i).Algorithm ||
			w == 1 && got.Status.Cycles != int64(i)) {
			err = fmt.Errorf("the other writer undid write %d: got %+v", i, got)
		}
		return err
	})
	checkScheduler(t, s, "after concurrent puts", store.Scheduler{
		GPUType: "v100", Settings: settingsAt(n - 1), Status: statusAt(n - 1),
	})
}

func testDurability(t *testing.T, f Factory) {
	ctx := t.Context()
	s, reopen := newStore(t, f)
	for i := range 5 {
		mustCreate(t, s, fullJob(fmt.Sprint("job-", i)))
	}
	mustCreate(t, s, simpleJob("plain", "k80", time.Time{}, ""))
	if err := s.SetPriority(ctx, "job-1", 9); err != nil {
		t.Fatalf("SetPriority: %v", err)
	}
	if err := s.RequestDelete(ctx, "plain"); err != nil {
		t.Fatalf("RequestDelete: %v", err)
	}
	mustSave(t, s, map[string]store.JobStatus{"job-2": {State: model.JobState{Status: model.StatusCompleted}}})
	if err := s.DeleteJob(ctx, "job-3"); err != nil {
		t.Fatalf("DeleteJob: %v", err)
	}
	mustPutSettings(t, s, "v100", store.Settings{Algorithm: "elastic", Params: map[string]string{"k": "v"}})
	mustPutStatus(t, s, "v100", store.SchedulerStatus{Now: time.Unix(7, 7), Cycles: 7})
	mustPutStatus(t, s, "k80", store.SchedulerStatus{Cycles: 1})
	mustSaveProgress(t, s, "job-4", []byte(`{"steps":5}`), fullJob("job-4").ProgressRevision)
	mustSaveProgress(t, s, "plain", []byte(`{"steps":6}`), 0)
	mustSaveHistory(t, s, "v100", "resnet50", []byte(`{"h":1}`))
	mustSaveHistory(t, s, "v100", "", []byte(`{"h":2}`))

	jobs, scheds := dump(t, s)
	if len(jobs) != 5 || len(scheds) != 2 {
		t.Fatalf("before close: %d jobs, %d schedulers; want 5, 2", len(jobs), len(scheds))
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2 := reopen()
	jobs2, scheds2 := dump(t, s2)
	if diff := cmp.Diff(jobs, jobs2); diff != "" {
		t.Errorf("jobs after reopen (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(scheds, scheds2); diff != "" {
		t.Errorf("schedulers after reopen (-before +after):\n%s", diff)
	}
	checkHistories(t, s2, "v100", map[string][]byte{"resnet50": []byte(`{"h":1}`), "": []byte(`{"h":2}`)})
	if j := mustGet(t, s2, "plain"); !bytes.Equal(j.Progress, []byte(`{"steps":6}`)) || j.ProgressRevision != 1 {
		t.Errorf("plain after reopen: progress %q at revision %d", j.Progress, j.ProgressRevision)
	}
	wantErrIs(t, "CreateJob of a taken name after reopen", s2.CreateJob(ctx, fullJob("job-0")), store.ErrExists)
	mustCreate(t, s2, fullJob("job-3"))
}

func dump(t *testing.T, s store.Store) ([]store.Job, []store.Scheduler) {
	t.Helper()
	jobs, err := s.ListJobs(t.Context(), store.ListOptions{})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	scheds, err := s.ListSchedulers(t.Context())
	if err != nil {
		t.Fatalf("ListSchedulers: %v", err)
	}
	return jobs, scheds
}

// calls runs every Store method but Close with ctx and returns their
// errors by name. Writes target "victim" jobs and the "victim" GPU type.
func calls(ctx context.Context, s store.Store) map[string]error {
	errs := make(map[string]error)
	errs["CreateJob"] = s.CreateJob(ctx, simpleJob("victim-new", "victim", time.Unix(1, 0), ""))
	errs["GetJob"] = getErr(s, ctx, "victim")
	_, errs["ListJobs"] = s.ListJobs(ctx, store.ListOptions{})
	errs["SetPriority"] = s.SetPriority(ctx, "victim", 5)
	errs["RequestDelete"] = s.RequestDelete(ctx, "victim")
	_, errs["SaveStatus"] = s.SaveStatus(ctx, map[string]store.StatusWrite{
		"victim": {Status: store.JobStatus{State: model.JobState{Status: model.StatusFailed}}},
	})
	errs["SetAside"] = s.SetAside(ctx, "victim", "test", time.Unix(2, 0))
	errs["DeleteJob"] = s.DeleteJob(ctx, "victim")
	errs["GetScheduler"] = schedErr(s, ctx, "victim")
	_, errs["ListSchedulers"] = s.ListSchedulers(ctx)
	errs["PutSettings"] = s.PutSettings(ctx, "victim", store.Settings{Algorithm: "x"})
	errs["PutStatus"] = s.PutStatus(ctx, "victim", store.SchedulerStatus{Cycles: 9})
	_, errs["SaveProgress"] = s.SaveProgress(ctx, "victim", []byte(`{"victim":1}`), 0)
	errs["SaveHistory"] = s.SaveHistory(ctx, "victim", "victim", []byte(`{"victim":1}`))
	_, errs["ListHistories"] = s.ListHistories(ctx, "victim")
	_, errs["ListFinished"] = s.ListFinished(ctx, 10)
	_, _, errs["CountJobs"] = s.CountJobs(ctx)
	_, errs["DeleteFinished"] = s.DeleteFinished(ctx, []string{"victim"})
	return errs
}

func testClosed(t *testing.T, f Factory) {
	ctx := t.Context()
	s, reopen := newStore(t, f)
	victim := simpleJob("victim", "victim", time.Unix(1, 0), model.StatusWaiting)
	mustCreate(t, s, victim)
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for name, err := range calls(ctx, s) {
		wantErrIs(t, name+" after Close", err, store.ErrClosed)
	}
	wantErrIs(t, "Close twice", s.Close(ctx), store.ErrClosed)
	s = reopen()
	checkJob(t, s, "victim after calls on a closed store", victim)
	checkHistories(t, s, "victim", nil)
}

func testCancelledContext(t *testing.T, f Factory) {
	s, _ := newStore(t, f)
	victim := simpleJob("victim", "victim", time.Unix(1, 0), model.StatusWaiting)
	mustCreate(t, s, victim)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, err := range calls(ctx, s) {
		wantErrIs(t, name+" with a cancelled context", err, context.Canceled)
	}
	checkJob(t, s, "victim after cancelled calls", victim)
	wantErrIs(t, "GetJob of a job created with a cancelled context",
		getErr(s, t.Context(), "victim-new"), store.ErrNotFound)
	wantErrIs(t, "GetScheduler of one written with a cancelled context",
		schedErr(s, t.Context(), "victim"), store.ErrNotFound)
	checkHistories(t, s, "victim", nil)
}

func mustCreate(t *testing.T, s store.Store, j store.Job) {
	t.Helper()
	if err := s.CreateJob(t.Context(), j); err != nil {
		t.Fatalf("CreateJob %s: %v", j.Name, err)
	}
}

func mustGet(t *testing.T, s store.Store, name string) store.Job {
	t.Helper()
	j, err := s.GetJob(t.Context(), name)
	if err != nil {
		t.Fatalf("GetJob %s: %v", name, err)
	}
	return j
}

// mustSave writes statuses over the jobs' current revisions, as a
// scheduler with an up-to-date copy would, and fails unless all are made.
func mustSave(t *testing.T, s store.Store, statuses map[string]store.JobStatus) {
	t.Helper()
	writes := make(map[string]store.StatusWrite, len(statuses))
	for name, st := range statuses {
		writes[name] = store.StatusWrite{Status: st, Revision: mustGet(t, s, name).StatusRevision}
	}
	wantSave(t, s, writes, store.SaveResult{})
}

// wantSave calls SaveStatus and fails unless it returns want.
func wantSave(t *testing.T, s store.Store, writes map[string]store.StatusWrite, want store.SaveResult) {
	t.Helper()
	got, err := s.SaveStatus(t.Context(), writes)
	if err != nil {
		t.Fatalf("SaveStatus: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SaveStatus result (-want +got):\n%s", diff)
	}
}

func mustPutSettings(t *testing.T, s store.Store, gpuType string, set store.Settings) {
	t.Helper()
	if err := s.PutSettings(t.Context(), gpuType, set); err != nil {
		t.Fatalf("PutSettings %s: %v", gpuType, err)
	}
}

func mustPutStatus(t *testing.T, s store.Store, gpuType string, st store.SchedulerStatus) {
	t.Helper()
	if err := s.PutStatus(t.Context(), gpuType, st); err != nil {
		t.Fatalf("PutStatus %s: %v", gpuType, err)
	}
}

func getErr(s store.Store, ctx context.Context, name string) error {
	_, err := s.GetJob(ctx, name)
	return err
}

func schedErr(s store.Store, ctx context.Context, gpuType string) error {
	_, err := s.GetScheduler(ctx, gpuType)
	return err
}

func checkJob(t *testing.T, s store.Store, what string, want store.Job) {
	t.Helper()
	if diff := cmp.Diff(want, mustGet(t, s, want.Name)); diff != "" {
		t.Errorf("%s: GetJob %s (-want +got):\n%s", what, want.Name, diff)
	}
}

func checkScheduler(t *testing.T, s store.Store, what string, want store.Scheduler) {
	t.Helper()
	got, err := s.GetScheduler(t.Context(), want.GPUType)
	if err != nil {
		t.Fatalf("%s: GetScheduler %s: %v", what, want.GPUType, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: GetScheduler %s (-want +got):\n%s", what, want.GPUType, diff)
	}
	checkUTC(t, what, reflect.ValueOf(got))
}

func wantNames(t *testing.T, s store.Store, opts store.ListOptions, want []string) {
	t.Helper()
	list, err := s.ListJobs(t.Context(), opts)
	if err != nil {
		t.Fatalf("ListJobs(%+v): %v", opts, err)
	}
	var got []string
	for _, j := range list {
		got = append(got, j.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListJobs(%+v) names (-want +got):\n%s", opts, diff)
	}
}

func wantErrIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one matching %q", what, err, target)
	}
}

// checkAllSet fails if any field reachable from v is zero, so a fixture
// that claims to cover every field does; a field added to the model later
// fails here until the fixture (and the stores' records) cover it. Paths
// in skip (such as "Job.Unreadable") are not checked.
func checkAllSet(t *testing.T, path string, v reflect.Value, skip ...string) {
	t.Helper()
	if slices.Contains(skip, path) {
		return
	}
	if v.IsZero() {
		t.Errorf("fixture leaves %s zero", path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			checkAllSet(t, path+"."+v.Type().Field(i).Name, v.Field(i), skip...)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return // elements may legitimately be zero, as Speedup[0] is
		}
		for i := range v.Len() {
			checkAllSet(t, fmt.Sprintf("%s[%d]", path, i), v.Index(i), skip...)
		}
	}
}

// checkUTC fails if any time reachable from v is not in UTC.
func checkUTC(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			if loc := v.Interface().(time.Time).Location(); loc != time.UTC {
				t.Errorf("%s is in %v, want UTC", path, loc)
			}
			return
		}
		for i := range v.NumField() {
			checkUTC(t, path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			checkUTC(t, fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	}
}
