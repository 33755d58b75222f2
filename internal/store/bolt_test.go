package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/vodascheduler/voda/internal/model"

	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/store/storetest"
)

// boltFactory gives each test a data directory that does not exist yet,
// so Open's creating it is exercised too.
func boltFactory(t *testing.T) storetest.Storage {
	dir := filepath.Join(t.TempDir(), "data")
	return storetest.Storage{
		Open: func(ctx context.Context) (store.Store, error) {
			return store.Open(ctx, "", dir)
		},
		Damage: boltDamager{path: filepath.Join(dir, "voda.db")},
	}
}

// boltDamager writes records into the store's file with bbolt directly:
// the jobs bucket maps each name to a JSON record.
type boltDamager struct{ path string }

func (d boltDamager) DamageJob(_ context.Context, name string, dmg storetest.Damage) ([]byte, error) {
	v := []byte("\x00 not a record {")
	if dmg != (storetest.Damage{}) {
		// A string where the record has a number.
		spec := map[string]any{"name": name, "maxWorkers": "eight"}
		rec := map[string]any{"name": name, "spec": spec}
		if dmg.GPUType != "" {
			spec["gpuType"] = dmg.GPUType
		}
		if !dmg.SubmitTime.IsZero() {
			spec["submitTime"] = dmg.SubmitTime.UnixNano()
		}
		if dmg.Status != "" {
			rec["status"] = map[string]any{"state": map[string]any{"status": dmg.Status}}
		}
		if dmg.StatusRevision != 0 {
			rec["statusRev"] = dmg.StatusRevision
		}
		var err error
		if v, err = json.Marshal(rec); err != nil {
			return nil, err
		}
	}
	return v, d.withJobs(func(b *bolt.Bucket) error { return b.Put([]byte(name), v) })
}

func (d boltDamager) Original(_ context.Context, name string) ([]byte, error) {
	var rec struct {
		Original []byte `json:"original"`
	}
	err := d.withJobs(func(b *bolt.Bucket) error { return json.Unmarshal(b.Get([]byte(name)), &rec) })
	return rec.Original, err
}

func (d boltDamager) withJobs(fn func(*bolt.Bucket) error) error {
	db, err := bolt.Open(d.path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error { return fn(tx.Bucket([]byte("jobs"))) })
	return errors.Join(err, db.Close())
}

func TestBolt(t *testing.T) {
	storetest.Run(t, boltFactory)
}

// TestBoltSecondOpen checks a second server on the same data directory
// fails promptly and says why, rather than hanging on the file lock.
func TestBoltSecondOpen(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	first, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("first Open: %v", err)
	}
	start := time.Now()
	second, err := store.Open(ctx, "", dir)
	elapsed := time.Since(start)
	if err == nil {
		_ = second.Close(ctx)
		t.Fatal("second Open of the same directory succeeded")
	}
	if elapsed > 5*time.Second {
		t.Errorf("second Open took %v to fail", elapsed)
	}
	if msg := err.Error(); !strings.Contains(msg, "locked") || !strings.Contains(msg, dir) {
		t.Errorf("second Open error %q does not say the file in %s is locked", msg, dir)
	}

	if err := first.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	third, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("Open after the first closed: %v", err)
	}
	if err := third.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// A scheduler record that cannot be decoded must not stop a start: Get
// says ErrDamaged (the scheduler then runs on its defaults), List leaves
// it out, and the next write of the record repairs it.
func TestBoltDamagedSchedulerRecord(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, gt := range []string{"a100", "v100"} {
		if err := s.PutSettings(ctx, gt, store.Settings{Algorithm: "SRJF"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "voda.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("schedulers")).Put([]byte("v100"), []byte(`{"settings": {"rateLimitNs": "soon"}}`))
	})
	if err = errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if _, err := s.GetScheduler(ctx, "v100"); !errors.Is(err, store.ErrDamaged) {
		t.Fatalf("GetScheduler of a damaged record: %v, want ErrDamaged", err)
	}
	list, err := s.ListSchedulers(ctx)
	if err != nil || len(list) != 1 || list[0].GPUType != "a100" {
		t.Fatalf("ListSchedulers = %+v, %v; want only a100", list, err)
	}
	if err := s.PutStatus(ctx, "v100", store.SchedulerStatus{Cycles: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetScheduler(ctx, "v100")
	if err != nil || got.Status.Cycles != 1 {
		t.Fatalf("after a write: %+v, %v", got, err)
	}
}

// TestBoltRecordWithoutProgress opens a file written before progress and
// histories existed: a job record without the progress fields and no
// histories bucket. The job reads with nil Progress at revision 0, takes
// progress writes from 0, and histories can be written.
func TestBoltRecordWithoutProgress(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	// A record as the store wrote it before: every field but progress.
	writeOldFile(t, dir, []string{"jobs", "schedulers"}, "old", oldRecord("old", ""))
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close(ctx) }()
	got, err := s.GetJob(ctx, "old")
	if err != nil || got.Unreadable != "" || got.Progress != nil || got.ProgressRevision != 0 ||
		got.StatusRevision != 4 || got.Status.Progress != 0.5 || got.Status.State.Status != "Running" {
		t.Fatalf("GetJob = %+v, %v; want the record, readable, with no progress at revision 0", got, err)
	}
	if _, err := s.SaveProgress(ctx, "old", []byte(`{}`), 1); !errors.Is(err, store.ErrConflict) {
		t.Errorf("SaveProgress at revision 1: %v, want ErrConflict", err)
	}
	if rev, err := s.SaveProgress(ctx, "old", []byte(`{"steps":1}`), 0); err != nil || rev != 1 {
		t.Errorf("SaveProgress at revision 0 = %d, %v; want 1", rev, err)
	}
	got, err = s.GetJob(ctx, "old")
	if err != nil || string(got.Progress) != `{"steps":1}` || got.ProgressRevision != 1 || got.StatusRevision != 4 {
		t.Errorf("GetJob after SaveProgress = %+v, %v", got, err)
	}
	if err := s.SaveHistory(ctx, "v100", "app", []byte(`{}`)); err != nil {
		t.Errorf("SaveHistory in a file that had no histories: %v", err)
	}
}

// oldRecord is a job record as the store wrote it before the progress
// bucket, with progress, the rest of a record's fields, when not empty.
func oldRecord(name, progress string) string {
	return `{"name":"` + name + `","kind":"MPIJob","manifest":null,` +
		`"spec":{"name":"` + name + `","gpuType":"v100","minWorkers":1,"maxWorkers":2,"requestedWorkers":1,"priority":0,"epochs":0,"submitTime":1000},` +
		`"model":"","deleteRequested":false,` +
		`"status":{"state":{"status":"Running","gpus":1,"placement":null,"attainedService":0,"firstStart":null,"lastChange":null,` +
		`"queue":0,"runSeconds":0,"queueSince":null,"queueService":0,"queueRunSeconds":0,"waitingSince":null,"restarts":0},` +
		`"est":{"remainingSeconds":0,"speedup":null},"progress":0.5,"queuePosition":0,"estimatedStart":null,"finishTime":null,"updated":null},` +
		`"statusRev":4` + progress + `}`
}

// writeOldFile writes a store file in dir with buckets and one job
// record, as an earlier version of the store could have left it.
func writeOldFile(t *testing.T, dir string, buckets []string, name, record string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "voda.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range buckets {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("jobs")).Put([]byte(name), []byte(record))
	})
	if err = errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestBoltRecordWithProgress opens a file written when a job's progress
// was kept in its record: the job reads with that progress and revision,
// takes progress writes over that revision only, and after one the
// progress read is the new one, through reopening and later record
// writes; a deleted and created again job starts with none.
func TestBoltRecordWithProgress(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	// {"steps":7} in base64, at revision 3.
	writeOldFile(t, dir, []string{"jobs", "schedulers", "histories"}, "old", oldRecord("old", `,"progress":"eyJzdGVwcyI6N30=","progressRev":3`))
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close(ctx) }()
	check := func(when, progress string, rev int64) {
		t.Helper()
		got, err := s.GetJob(ctx, "old")
		if err != nil || got.Unreadable != "" || string(got.Progress) != progress || got.ProgressRevision != rev || got.StatusRevision != 4 {
			t.Fatalf("GetJob %s = %+v, %v; want progress %s at revision %d", when, got, err, progress, rev)
		}
		list, err := s.ListJobs(ctx, store.ListOptions{})
		if err != nil || len(list) != 1 || string(list[0].Progress) != progress || list[0].ProgressRevision != rev {
			t.Fatalf("ListJobs %s = %+v, %v; want progress %s at revision %d", when, list, err, progress, rev)
		}
	}
	check("as stored", `{"steps":7}`, 3)
	for _, rev := range []int64{0, 2, 4} {
		if _, err := s.SaveProgress(ctx, "old", []byte(`{}`), rev); !errors.Is(err, store.ErrConflict) {
			t.Errorf("SaveProgress at revision %d: %v, want ErrConflict", rev, err)
		}
	}
	if rev, err := s.SaveProgress(ctx, "old", []byte(`{"steps":8}`), 3); err != nil || rev != 4 {
		t.Fatalf("SaveProgress at revision 3 = %d, %v; want 4", rev, err)
	}
	check("after SaveProgress", `{"steps":8}`, 4)
	if err := s.SetPriority(ctx, "old", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err = store.Open(ctx, "", dir); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	check("after SetPriority and reopening", `{"steps":8}`, 4)
	if _, err := s.SaveProgress(ctx, "old", nil, 3); !errors.Is(err, store.ErrConflict) {
		t.Errorf("SaveProgress at the record's old revision 3: %v, want ErrConflict", err)
	}
	if err := s.DeleteJob(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, store.Job{Name: "old", Kind: "MPIJob"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetJob(ctx, "old"); err != nil || got.Progress != nil || got.ProgressRevision != 0 {
		t.Errorf("GetJob after deleting and creating again = %+v, %v; want no progress at revision 0", got, err)
	}
}

// TestBoltDamagedProgressEntry: a progress entry too short to hold its
// revision makes its job unreadable and refuses progress writes, and
// SetAside replaces it with an empty one.
func TestBoltDamagedProgressEntry(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	writeOldFile(t, dir, []string{"jobs", "schedulers", "histories", "progress"}, "job", oldRecord("job", ""))
	db, err := bolt.Open(filepath.Join(dir, "voda.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("progress")).Put([]byte("job"), []byte{1, 2, 3}) })
	if err = errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close(ctx) }()
	got, err := s.GetJob(ctx, "job")
	if err != nil || !strings.Contains(got.Unreadable, "3 bytes") || got.Spec.GPUType != "v100" || got.Status.State.Status != "Running" {
		t.Fatalf("GetJob = %+v, %v; want it unreadable for its progress, with its GPU type and status", got, err)
	}
	if _, err := s.SaveProgress(ctx, "job", nil, 0); err == nil || errors.Is(err, store.ErrConflict) {
		t.Errorf("SaveProgress over a damaged entry: %v, want a failure", err)
	}
	if err := s.SetAside(ctx, "job", "damaged", time.Unix(5, 0)); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetJob(ctx, "job")
	if err != nil || got.Unreadable != "" || got.Status.State.Status != "Failed" || got.Progress != nil || got.ProgressRevision != 0 {
		t.Fatalf("GetJob after SetAside = %+v, %v; want it Failed, readable, with no progress", got, err)
	}
	if rev, err := s.SaveProgress(ctx, "job", []byte(`{}`), 0); err != nil || rev != 1 {
		t.Errorf("SaveProgress after SetAside = %d, %v; want 1", rev, err)
	}
}

// TestBoltIndexBuiltOnOpen opens files without a job index, as versions
// before it wrote them: Open builds it, in transactions of the batch size,
// says so in the log, and records it, so the next Open does nothing; a
// job written without the index (by an older version, in between) or an
// index whose build did not finish is indexed again.
func TestBoltIndexBuiltOnOpen(t *testing.T) {
	ctx := t.Context()
	defer store.SetIndexBatch(3)()
	dir := t.TempDir()
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for i := range 10 {
		name := fmt.Sprintf("job-%02d", 9-i)
		j := waitingJob(name)
		j.Spec.SubmitTime = time.Unix(int64(i/2), 0)
		j.Spec.GPUType = []string{"v100", "k80"}[i%2]
		if i%3 == 0 {
			j.Status.State.Status = model.StatusCompleted
			j.Status.FinishTime = time.Unix(100-int64(i), 0)
		} else if j.Spec.GPUType == "v100" {
			live = append(live, name)
		}
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	updateFile(t, dir, func(tx *bolt.Tx) error {
		for _, b := range []string{"jobIndex", "jobOrder", "jobLive", "jobFinished", "meta"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return fmt.Errorf("delete %s: %w", b, err)
			}
		}
		return tx.Bucket([]byte("jobs")).Put([]byte("job-dmg"), []byte(`{"name":"job-dmg","spec":{"gpuType":"v100","submitTime":4500000000},"status":17}`))
	})
	live = append(live, "job-dmg") // at 4.5 s, after them all
	nLive := 7
	all := []string{"job-08", "job-09", "job-06", "job-07", "job-04", "job-05", "job-02", "job-03", "job-00", "job-01", "job-dmg"}
	check := func(when string, s store.Store) {
		t.Helper()
		for _, c := range []struct {
			opts store.ListOptions
			want []string
		}{{store.ListOptions{GPUType: "v100", Live: true}, live}, {store.ListOptions{}, all}} {
			list, err := s.ListJobs(ctx, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range list {
				got = append(got, j.Name)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s: ListJobs(%+v) (-want +got):\n%s", when, c.opts, diff)
			}
		}
		if l, f, err := s.CountJobs(ctx); err != nil || l != nLive || f != 4 {
			t.Errorf("%s: CountJobs = %d, %d, %v; want %d live, 4 finished", when, l, f, err, nLive)
		}
		fin, err := s.ListFinished(ctx, 10)
		if err != nil || len(fin) != 4 || fin[0].Name != "job-00" || !fin[0].FinishTime.Equal(time.Unix(91, 0)) {
			t.Errorf("%s: ListFinished = %+v, %v; want job-00 (finished at 91 s) first of 4", when, fin, err)
		}
		page, err := s.ListJobs(ctx, store.ListOptions{Limit: 5, After: store.Position{SubmitTime: time.Unix(2, 0), Name: "job-05"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range page {
			got = append(got, j.Name)
		}
		if diff := cmp.Diff([]string{"job-02", "job-03", "job-00", "job-01", "job-dmg"}, got); diff != "" {
			t.Errorf("%s: a page after job-05 (-want +got):\n%s", when, diff)
		}
	}
	// step opens the store, checks the log says logged (nothing if
	// logged is empty) and the store's lists, and closes it.
	step := func(when string, logged ...string) {
		t.Helper()
		var logs bytes.Buffer
		s, err := store.Open(ctx, "", dir, store.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatalf("%s: Open: %v", when, err)
		}
		for _, w := range logged {
			if !strings.Contains(logs.String(), w) {
				t.Errorf("%s: log %q does not say %q", when, logs.String(), w)
			}
		}
		if len(logged) == 0 && logs.Len() != 0 {
			t.Errorf("%s: log %q, want nothing", when, logs.String())
		}
		check(when, s)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	step("first open", "indexed the jobs", "the file has no index", "jobs=11", "unreadable=1", "transactions=4")
	step("second open")

	// An older version, run in between, created a job: it has no entry.
	updateFile(t, dir, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("jobs")).Put([]byte("job-old"), []byte(oldRecord("job-old", "")))
	})
	live = append([]string{"job-old"}, live...) // submitted at 1 µs
	all = slices.Insert(all, 2, "job-old")
	nLive++
	step("after an older version's write", "the job index holds 11 jobs, the file 12")

	// Keys the entries do not account for are never listed: those of a
	// job that is not there, and those of job-07 at a time not its own.
	epoch := "\x01\x80\x00\x00\x00\x00\x00\x00\x00"
	updateFile(t, dir, func(tx *bolt.Tx) error {
		live, order := tx.Bucket([]byte("jobLive")), tx.Bucket([]byte("jobOrder"))
		return errors.Join(live.Put([]byte("v100/"+epoch+"job-gone"), nil), live.Put([]byte("v100/"+epoch+"job-07"), nil),
			order.Put([]byte(epoch+"job-gone"), nil), order.Put([]byte(epoch+"job-07"), nil))
	})
	step("with stray keys")

	// A build that did not finish: no version recorded.
	updateFile(t, dir, func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("indexVersion")) })
	step("after an interrupted build", "the file has no index", "jobs=12")
}

// updateFile runs fn in a write transaction on the store file in dir, as
// another program could while no store has it open.
func updateFile(t *testing.T, dir string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "voda.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(db.Update(fn), db.Close()); err != nil {
		t.Fatal(err)
	}
}
