package store

import (
	"bytes"
	"cmp"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vodascheduler/voda/internal/model"
)

// FuzzIndexEntry: any bytes decode without panicking, and an entry that
// decodes encodes back to the same bytes, so a damaged entry is refused
// rather than misread.
func FuzzIndexEntry(f *testing.F) {
	f.Add(indexEntry{GPUType: "v100", Live: true, Submit: optTime{N: 5, Set: true}}.encode())
	f.Add(indexEntry{GPUType: "", Finish: optTime{N: -7, Set: true}}.encode())
	f.Add([]byte{entryFormat, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := decodeEntry(b)
		if ok && !bytes.Equal(e.encode(), b) {
			t.Errorf("decodeEntry(%x) = %+v, which encodes as %x", b, e, e.encode())
		}
	})
}

// FuzzOrderKey checks the index's order against ListJobs': for a stored
// job and any position, even one outside the storable range, the job's
// orderKey is after the position's key exactly when the job comes after
// the position in Go's time order, then name order.
func FuzzOrderKey(f *testing.F) {
	f.Add(int64(0), false, "a", int64(0), int64(0), "a")
	f.Add(int64(-1), true, "job", int64(-1), int64(999999999), "job")
	f.Add(int64(math.MaxInt64), true, "z", int64(1<<40), int64(0), "")
	f.Add(int64(math.MinInt64), true, "a\x00", int64(-1<<40), int64(0), "a")
	f.Fuzz(func(t *testing.T, jobN int64, jobSet bool, jobName string, posSec, posNsec int64, posName string) {
		if jobName == "" {
			return // no job has an empty name
		}
		job := optTime{N: jobN, Set: jobSet}
		if !jobSet {
			job.N = 0
		}
		jobTime := decodeTime(job.ptr())
		pos := Position{Name: posName}
		if posSec != 0 || posNsec != 0 {
			pos.SubmitTime = time.Unix(posSec, posNsec)
		}
		want := cmp.Or(jobTime.Compare(pos.SubmitTime), strings.Compare(jobName, pos.Name)) > 0
		submit, name, none := pos.stored()
		got := !none && bytes.Compare(orderKey(job, jobName), orderKey(optOf(submit), name)) > 0
		if got != want {
			t.Errorf("job at %v (%q) after position %v (%q): index says %v, want %v", jobTime, jobName, pos.SubmitTime, pos.Name, got, want)
		}
	})
}

// A file whose last write was this version's opens without counting its
// jobs (indexCurrent); a write by another program (here, bbolt itself,
// as an older voda would write) makes the next open count them again.
func TestIndexCurrentAfterOwnWrites(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s, err := openBolt(ctx, dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	j := Job{Name: "a", Kind: "MPIJob", Spec: model.JobSpec{Name: "a", GPUType: "v100", MinWorkers: 1, MaxWorkers: 1, RequestedWorkers: 1, SubmitTime: time.Unix(1, 0)}}
	if err := s.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	current := func(db *bolt.DB) bool {
		var ok bool
		if err := db.View(func(tx *bolt.Tx) error { ok = indexCurrent(tx); return nil }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !current(s.db) {
		t.Error("after this version's write, the index is not known current")
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(schedulersBucket).Put([]byte("x"), []byte("{}")) }); err != nil {
		t.Fatal(err)
	}
	if current(s.db) {
		t.Error("after another program's write, the index is still taken as current")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The next open counts, finds the index right, and marks it current.
	s, err = openBolt(ctx, dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if !current(s.db) {
		t.Error("after an open that checked the index, it is not known current")
	}
}
