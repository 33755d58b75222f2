package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bbolt has no secondary indexes, so the embedded store keeps its own, in
// buckets written in the same transaction as every write that changes
// what they hold (CreateJob, SaveStatus, SetAside, DeleteJob,
// DeleteFinished), so that listing live jobs, a page or the oldest
// finished jobs reads only what it returns:
//
//   - jobIndexBucket, the source of truth: each job's indexEntry (GPU
//     type, submit time, liveness, finish time) by name. The other index
//     buckets are derived from it, and their keys are checked against it
//     when read, so a key it does not account for is never listed.
//   - jobOrderBucket: orderKey(submit time, name) of every job, in
//     ListJobs' order.
//   - jobLiveBucket: typePrefix(GPU type) then orderKey, of live jobs
//     only: a scheduler's GPU type is one prefix.
//   - jobFinishedBucket: timeKey(finish time) then name, of terminal jobs.
//   - metaBucket: the index's format version, written once the index is
//     complete, and the counts of live and terminal jobs.
//
// An entry is made from the record when the store writes it, or, when
// the index is built (see ensureIndex), from what can be read of a record
// that does not decode. The entry, not the record, then says where the
// job is listed: a record damaged after it was indexed keeps its place.
var (
	jobIndexBucket    = []byte("jobIndex")
	jobOrderBucket    = []byte("jobOrder")
	jobLiveBucket     = []byte("jobLive")
	jobFinishedBucket = []byte("jobFinished")
	metaBucket        = []byte("meta")
)

// Keys of metaBucket.
var (
	// indexVersionKey holds indexVersion (8 bytes, big endian) once the
	// index of every job is built.
	indexVersionKey = []byte("indexVersion")
	// countsKey holds the live and the terminal job counts (8 bytes each,
	// big endian).
	countsKey = []byte("jobCounts")
	// indexedTxKey holds the ID (8 bytes, big endian) of the last write
	// transaction this version made, every one of which keeps the index.
	// When it is the file's last transaction, no other program (an older
	// voda, which knows no index) wrote since, and the index is current
	// without counting the jobs: counting walks every page of the file,
	// which at 100,000 jobs takes seconds and maps it all into memory.
	indexedTxKey = []byte("indexedTx")
)

// indexVersion is the format of the index buckets; a file recording
// another (or none) has its index rebuilt on open.
const indexVersion = 1

// indexEntry is what the index knows of one job.
type indexEntry struct {
	GPUType string
	Live    bool
	Submit  optTime
	// Finish is set only for a terminal job, so a live job's entry does
	// not change with its status.
	Finish optTime
}

// optTime is a stored time, unix nanoseconds; Set is false for the zero
// time.
type optTime struct {
	N   int64
	Set bool
}

func optOf(n *int64) optTime {
	if n == nil {
		return optTime{}
	}
	return optTime{N: *n, Set: true}
}

func (t optTime) ptr() *int64 {
	if !t.Set {
		return nil
	}
	return &t.N
}

// entryOf is the entry of a job stored as rec.
func entryOf(rec jobRecord) indexEntry {
	e := indexEntry{GPUType: rec.Spec.GPUType, Live: rec.Status.live(), Submit: optOf(rec.Spec.SubmitTime)}
	if !e.Live {
		e.Finish = optOf(rec.Status.FinishTime)
	}
	return e
}

// entryOfPartial is the entry of a record that does not decode, from what
// can be read of it (see ListOptions).
func entryOfPartial(p partialJob) indexEntry {
	e := indexEntry{GPUType: p.GPUType, Live: !p.Status.Done(), Submit: optOf(p.SubmitTime)}
	if !e.Live {
		e.Finish = optOf(p.FinishTime)
	}
	return e
}

// Entry encoding: format byte, flags byte, submit and finish times (8
// bytes each, big endian), then the GPU type.
const (
	entryFormat     = 1
	entryHeader     = 18
	entryLive       = 1 << 0
	entrySubmitSet  = 1 << 1
	entryFinishSet  = 1 << 2
	entryKnownFlags = entryLive | entrySubmitSet | entryFinishSet
)

func (e indexEntry) encode() []byte {
	var flags byte
	if e.Live {
		flags |= entryLive
	}
	if e.Submit.Set {
		flags |= entrySubmitSet
	}
	if e.Finish.Set {
		flags |= entryFinishSet
	}
	b := make([]byte, 0, entryHeader+len(e.GPUType))
	b = append(b, entryFormat, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Submit.N))
	b = binary.BigEndian.AppendUint64(b, uint64(e.Finish.N))
	return append(b, e.GPUType...)
}

// decodeEntry reads an entry; ok is false if b is not one this version
// writes.
func decodeEntry(b []byte) (e indexEntry, ok bool) {
	if len(b) < entryHeader || b[0] != entryFormat || b[1]&^entryKnownFlags != 0 {
		return indexEntry{}, false
	}
	flags := b[1]
	e = indexEntry{
		GPUType: string(b[entryHeader:]),
		Live:    flags&entryLive != 0,
		Submit:  optTime{N: int64(binary.BigEndian.Uint64(b[2:])), Set: flags&entrySubmitSet != 0},
		Finish:  optTime{N: int64(binary.BigEndian.Uint64(b[10:])), Set: flags&entryFinishSet != 0},
	}
	if !e.Submit.Set && e.Submit.N != 0 || !e.Finish.Set && e.Finish.N != 0 {
		return indexEntry{}, false
	}
	return e, true
}

// getEntry returns job name's entry; ok is false if it has none (or one
// this version cannot read, which the next write of the job replaces).
func getEntry(tx *bolt.Tx, name string) (indexEntry, bool) {
	v := tx.Bucket(jobIndexBucket).Get([]byte(name))
	if v == nil {
		return indexEntry{}, false
	}
	return decodeEntry(v)
}

// timeKeySize is the size of a timeKey.
const timeKeySize = 9

// timeKey encodes a stored time so that byte order is time order, the
// zero time first: 0 and eight zero bytes for the zero time; otherwise 1
// and the unix nanoseconds with the sign bit flipped, big endian.
func timeKey(t optTime) []byte {
	b := make([]byte, timeKeySize, timeKeySize+64)
	if t.Set {
		b[0] = 1
		binary.BigEndian.PutUint64(b[1:], uint64(t.N)^(1<<63))
	}
	return b
}

// orderKey is the key of a job in ListJobs' order: its submit time's
// timeKey, then its name. The time has a fixed size, so byte order is
// time order, then name order.
func orderKey(submit optTime, name string) []byte { return append(timeKey(submit), name...) }

// liveKey is a live job's key in jobLiveBucket.
func (e indexEntry) liveKey(name string) []byte {
	return append([]byte(typePrefix(e.GPUType)), orderKey(e.Submit, name)...)
}

// finishedKey is a terminal job's key in jobFinishedBucket.
func (e indexEntry) finishedKey(name string) []byte { return append(timeKey(e.Finish), name...) }

// reindex makes job name's index match next (nil: the job is gone),
// replacing what its previous entry put there and keeping the counts.
// A job whose entry does not change (a live job's status write) costs
// one read.
func reindex(tx *bolt.Tx, name string, next *indexEntry) error {
	prev, had := getEntry(tx, name)
	if had && next != nil && prev == *next {
		return nil
	}
	var live, finished int64
	if had {
		if err := putIndexKeys(tx, name, prev, false); err != nil {
			return err
		}
		live, finished = countOf(prev, -1)
	}
	idx := tx.Bucket(jobIndexBucket)
	if next == nil {
		if err := idx.Delete([]byte(name)); err != nil {
			return err
		}
	} else {
		if err := putIndexKeys(tx, name, *next, true); err != nil {
			return err
		}
		if err := idx.Put([]byte(name), next.encode()); err != nil {
			return err
		}
		l, f := countOf(*next, 1)
		live, finished = live+l, finished+f
	}
	return addCounts(tx, live, finished)
}

// putIndexKeys puts (or, with put false, deletes) the keys of job name's
// entry e in the derived index buckets: its order key, and its live or
// its finished key.
func putIndexKeys(tx *bolt.Tx, name string, e indexEntry, put bool) error {
	bucket, key := jobFinishedBucket, e.finishedKey(name)
	if e.Live {
		bucket, key = jobLiveBucket, e.liveKey(name)
	}
	for _, k := range [2]struct{ bucket, key []byte }{{jobOrderBucket, orderKey(e.Submit, name)}, {bucket, key}} {
		b := tx.Bucket(k.bucket)
		var err error
		if put {
			err = b.Put(k.key, nil)
		} else {
			err = b.Delete(k.key)
		}
		if err != nil {
			return fmt.Errorf("index %s: %w", k.bucket, err)
		}
	}
	return nil
}

// countOf is what entry e adds (sign 1) or takes (sign -1) from the live
// and terminal counts.
func countOf(e indexEntry, sign int64) (live, finished int64) {
	if e.Live {
		return sign, 0
	}
	return 0, sign
}

// getCounts returns the live and terminal job counts.
func getCounts(tx *bolt.Tx) (live, finished int64) {
	v := tx.Bucket(metaBucket).Get(countsKey)
	if len(v) != 16 {
		return 0, 0
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
}

// addCounts adds to the live and terminal job counts.
func addCounts(tx *bolt.Tx, live, finished int64) error {
	if live == 0 && finished == 0 {
		return nil
	}
	l, f := getCounts(tx)
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(max(l+live, 0)))
	v = binary.BigEndian.AppendUint64(v, uint64(max(f+finished, 0)))
	return tx.Bucket(metaBucket).Put(countsKey, v)
}

// indexedJob is one job an index scan found: its name and its entry, which
// its key was checked against.
type indexedJob struct {
	name  string
	entry indexEntry
}

// scanOrder calls fn with each indexed job after the orderKey after (nil:
// from the first), in ListJobs' order, until fn returns false.
func scanOrder(tx *bolt.Tx, after []byte, fn func(indexedJob) bool) {
	c := tx.Bucket(jobOrderBucket).Cursor()
	for k, _ := seekAfter(c, after); k != nil; k, _ = c.Next() {
		if len(k) < timeKeySize {
			continue
		}
		name := string(k[timeKeySize:])
		e, ok := getEntry(tx, name)
		if !ok || !bytes.Equal(orderKey(e.Submit, name), k) {
			continue // not this job's key (see reindex)
		}
		if !fn(indexedJob{name: name, entry: e}) {
			return
		}
	}
}

// liveJobs returns the live jobs of GPU type gpuType and those whose type
// is empty (could not be read), or every live job if gpuType is empty,
// after the orderKey after (nil: all), in ListJobs' order. It reads keys
// only, and sorts them: live jobs are few. What it returns is valid only
// inside tx.
func liveJobs(tx *bolt.Tx, gpuType string, after []byte) []indexedJob {
	type found struct {
		order []byte // the key's orderKey
		job   indexedJob
	}
	var all []found
	c := tx.Bucket(jobLiveBucket).Cursor()
	scan := func(prefix []byte) {
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			i := bytes.IndexByte(k, '/')
			if i < 0 || len(k)-i-1 < timeKeySize {
				continue
			}
			order := k[i+1:]
			if after != nil && bytes.Compare(order, after) <= 0 {
				continue
			}
			name := string(order[timeKeySize:])
			e, ok := getEntry(tx, name)
			if !ok || !e.Live || !bytes.Equal(e.liveKey(name), k) {
				continue // not this job's key (see reindex)
			}
			all = append(all, found{order, indexedJob{name: name, entry: e}})
		}
	}
	if gpuType == "" {
		scan(nil)
	} else {
		scan([]byte(typePrefix(gpuType)))
		scan([]byte(typePrefix("")))
	}
	slices.SortFunc(all, func(a, b found) int { return bytes.Compare(a.order, b.order) })
	out := make([]indexedJob, len(all))
	for i, f := range all {
		out[i] = f.job
	}
	return out
}

// scanFinished calls fn with each terminal job, oldest finish time first,
// until fn returns false.
func scanFinished(tx *bolt.Tx, fn func(indexedJob) bool) {
	c := tx.Bucket(jobFinishedBucket).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) < timeKeySize {
			continue
		}
		name := string(k[timeKeySize:])
		e, ok := getEntry(tx, name)
		if !ok || e.Live || !bytes.Equal(e.finishedKey(name), k) {
			continue // not this job's key (see reindex)
		}
		if !fn(indexedJob{name: name, entry: e}) {
			return
		}
	}
}

// indexBatch bounds the jobs ensureIndex indexes in one transaction, so
// that a large file is not indexed in one huge transaction; a variable so
// tests can make it small.
var indexBatch = 2000

// ensureIndex builds the index if the file has none, or one of another
// version, or one that does not account for every job (a job written by
// a version of the store that kept no index). It builds it in
// transactions of indexBatch jobs and records its version last, so an
// interrupted build (a crash, ctx done between two transactions) is redone
// at the next open; it logs what it did.
func ensureIndex(ctx context.Context, db *bolt.DB, path string, log *slog.Logger, current bool) error {
	var why string
	err := db.View(func(tx *bolt.Tx) error {
		version := tx.Bucket(metaBucket).Get(indexVersionKey)
		switch {
		case version == nil:
			why = "the file has no index of its jobs"
		case len(version) != 8 || binary.BigEndian.Uint64(version) != indexVersion:
			why = fmt.Sprintf("the file's job index has format %x, not %d", version, indexVersion)
		case current:
			// This version wrote last: the index is current.
		default:
			if jobs, entries := tx.Bucket(jobsBucket).Stats().KeyN, tx.Bucket(jobIndexBucket).Stats().KeyN; jobs != entries {
				why = fmt.Sprintf("the job index holds %d jobs, the file %d", entries, jobs)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if why == "" {
		if current {
			return nil
		}
		// Counted and found right: mark it, so the next open need not count.
		return db.Update(markIndexed)
	}
	start := time.Now()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{jobIndexBucket, jobOrderBucket, jobLiveBucket, jobFinishedBucket} {
			if err := tx.DeleteBucket(b); err != nil {
				return fmt.Errorf("clear index %s: %w", b, err)
			}
			if _, err := tx.CreateBucket(b); err != nil {
				return fmt.Errorf("create index %s: %w", b, err)
			}
		}
		meta := tx.Bucket(metaBucket)
		return errors.Join(meta.Delete(indexVersionKey), meta.Delete(countsKey))
	})
	if err != nil {
		return fmt.Errorf("index jobs: %w", err)
	}
	var after []byte
	var jobs, unreadable, txs int
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("index jobs: stopped after %d: %w", jobs, err)
		}
		err := db.Update(func(tx *bolt.Tx) error {
			c := tx.Bucket(jobsBucket).Cursor()
			k, v := seekAfter(c, after)
			for n := 0; k != nil && n < indexBatch; n++ {
				name := string(k)
				e, ok := storedEntry(name, v)
				if !ok {
					unreadable++
				}
				if err := reindex(tx, name, &e); err != nil {
					return fmt.Errorf("job %s: %w", name, err)
				}
				jobs++
				after = bytes.Clone(k)
				k, v = c.Next()
			}
			done = k == nil
			return nil
		})
		if err != nil {
			return fmt.Errorf("index jobs: %w", err)
		}
		txs++
	}
	var live, finished int64
	err = db.Update(func(tx *bolt.Tx) error {
		live, finished = getCounts(tx)
		if err := tx.Bucket(metaBucket).Put(indexVersionKey, binary.BigEndian.AppendUint64(nil, indexVersion)); err != nil {
			return err
		}
		return markIndexed(tx)
	})
	if err != nil {
		return fmt.Errorf("index jobs: %w", err)
	}
	level := slog.LevelInfo
	if jobs == 0 {
		level = slog.LevelDebug // a new file: not news
	}
	log.Log(ctx, level, "store: indexed the jobs", "file", path, "why", why, "jobs", jobs, "live", live, "finished", finished,
		"unreadable", unreadable, "transactions", txs, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// markIndexed records in tx that this version, which keeps the job index,
// made the file's latest write (indexedTxKey).
func markIndexed(tx *bolt.Tx) error {
	return tx.Bucket(metaBucket).Put(indexedTxKey, binary.BigEndian.AppendUint64(nil, uint64(tx.ID())))
}

// indexCurrent reports, in a read transaction, whether the file's last
// write was this version's (markIndexed), so that its index is current.
func indexCurrent(tx *bolt.Tx) bool {
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		return false
	}
	v := meta.Get(indexedTxKey)
	return len(v) == 8 && binary.BigEndian.Uint64(v) == uint64(tx.ID())
}

// storedEntry is the entry of the record v stored under name: from the
// record, or from what can be read of it if it does not decode (ok false).
func storedEntry(name string, v []byte) (e indexEntry, ok bool) {
	rec, err := decodeBoltJob(name, v)
	if err != nil {
		return entryOfPartial(partialBoltJob(name, v, err)), false
	}
	return entryOf(rec), true
}

// seekAfter moves c to the first key after after (nil: the first key).
func seekAfter(c *bolt.Cursor, after []byte) (k, v []byte) {
	if after == nil {
		return c.First()
	}
	if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	return k, v
}
