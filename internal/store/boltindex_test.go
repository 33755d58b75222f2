package store

import (
	"bytes"
	"cmp"
	"math"
	"strings"
	"testing"
	"time"
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
