package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/vodascheduler/voda/internal/model"
)

// boltFile is the embedded store's file name inside the data directory.
const boltFile = "voda.db"

// boltLockTimeout bounds the wait for bbolt's file lock: a second process
// on the same data directory fails with a clear error instead of hanging.
const boltLockTimeout = time.Second

// Buckets: jobs by name, schedulers by GPU type, each value a JSON record;
// histories by historyKey, each value the history's bytes as given;
// progress by job name, each value a job's ProgressRevision (8 bytes, big
// endian) then its Progress as given (see progressEntry).
var (
	jobsBucket       = []byte("jobs")
	schedulersBucket = []byte("schedulers")
	historiesBucket  = []byte("histories")
	progressBucket   = []byte("progress")
)

// boltStore is the embedded, file-backed Store. Every write goes through
// db.Batch, so concurrent writers (a burst of submissions) share one
// commit and one fsync instead of queueing for one each.
//
// Batch may run a function more than once (it retries the rest of a batch
// when one function fails), so the write functions below are idempotent:
// they report expected outcomes (exists, not found) through variables they
// reset on every run and return an error only for real failures, which
// also keeps one caller's ErrExists from rolling back its batch-mates.
type boltStore struct {
	gate gate
	db   *bolt.DB
	path string
}

var _ Store = (*boltStore)(nil)

// openBolt opens (creating if needed) the store file in dataDir, and
// builds its job index if it has none (see ensureIndex), logging to log.
func openBolt(ctx context.Context, dataDir string, log *slog.Logger) (*boltStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dataDir, err)
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("store: open: create data directory: %w", err)
	}
	path := filepath.Join(dataDir, boltFile)
	db, err := openBoltDB(path)
	if errors.Is(err, ErrDamaged) {
		return nil, err
	}
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("store: open %s: file is locked, is another voda server using this data directory? (gave up after %s): %w",
			path, boltLockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// Whether this version's index is known current (its last write was
	// this version's) is read before the write below makes one more.
	var current bool
	err = db.View(func(tx *bolt.Tx) error {
		current = indexCurrent(tx)
		return nil
	})
	if err == nil {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{jobsBucket, schedulersBucket, historiesBucket, progressBucket,
				jobIndexBucket, jobOrderBucket, jobLiveBucket, jobFinishedBucket, metaBucket} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return fmt.Errorf("create bucket %s: %w", b, err)
				}
			}
			if current {
				return markIndexed(tx)
			}
			return nil
		})
	}
	if err == nil {
		err = ensureIndex(ctx, db, path, log, current)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return &boltStore{db: db, path: path}, nil
}

// batch runs fn in a write transaction shared with concurrent writers
// (db.Batch), and records that this version, which keeps the job index,
// wrote last (markIndexed).
func (s *boltStore) batch(fn func(tx *bolt.Tx) error) error {
	return s.db.Batch(func(tx *bolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return markIndexed(tx)
	})
}

func (s *boltStore) CreateJob(ctx context.Context, j Job) error {
	if err := s.gate.enter(ctx); err != nil {
		return fmt.Errorf("store: create job %s: %w", j.Name, err)
	}
	defer s.gate.leave()
	if j.Name == "" {
		return errors.New("store: create job: empty name")
	}
	rec, err := encodeJob(j)
	if err != nil {
		return fmt.Errorf("store: create job %s: %w", j.Name, err)
	}
	// The progress goes in its own bucket, as SaveProgress writes it.
	rec.Progress, rec.ProgressRevision = nil, 0
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("store: create job %s: %w", j.Name, err)
	}
	var exists bool
	err = s.batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(jobsBucket)
		exists = b.Get([]byte(j.Name)) != nil
		if exists {
			return nil
		}
		if err := b.Put([]byte(j.Name), val); err != nil {
			return err
		}
		e := entryOf(rec)
		if err := reindex(tx, j.Name, &e); err != nil {
			return err
		}
		return putProgress(tx, j.Name, j.ProgressRevision, j.Progress)
	})
	if err != nil {
		return fmt.Errorf("store: create job %s: %w", j.Name, err)
	}
	if exists {
		return fmt.Errorf("store: create job %s: %w", j.Name, ErrExists)
	}
	return nil
}

func (s *boltStore) GetJob(ctx context.Context, name string) (Job, error) {
	if err := s.gate.enter(ctx); err != nil {
		return Job{}, fmt.Errorf("store: get job %s: %w", name, err)
	}
	defer s.gate.leave()
	var j Job
	var found bool
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(jobsBucket).Get([]byte(name))
		if found = v != nil; found {
			j = readBoltJob(tx, name, v)
		}
		return nil
	})
	if err != nil {
		return Job{}, fmt.Errorf("store: get job %s: %w", name, err)
	}
	if !found {
		return Job{}, fmt.Errorf("store: get job %s: %w", name, ErrNotFound)
	}
	return j, nil
}

// ListJobs reads the index (see boltindex.go) in ListJobs' order and
// decodes only the records it may return: live jobs from the live index,
// the others from the order index, from a seek to opts.After on. The index
// entry, not the record, places a job, so an unreadable record is
// returned with the submit time it was indexed under.
func (s *boltStore) ListJobs(ctx context.Context, opts ListOptions) ([]Job, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	defer s.gate.leave()
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	submit, name, none := opts.After.stored()
	if none {
		return nil, nil
	}
	var after []byte
	if opts.After != (Position{}) {
		after = orderKey(optOf(submit), name)
	}
	var jobs []Job
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(jobsBucket)
		// take reads one job the index lists, and reports whether the
		// list wants more.
		take := func(ij indexedJob) bool {
			if v := b.Get([]byte(ij.name)); v != nil {
				if j := readBoltJob(tx, ij.name, v); opts.matches(j) {
					jobs = append(jobs, j)
				}
			}
			return opts.Limit == 0 || len(jobs) < opts.Limit
		}
		if opts.Live {
			for _, ij := range liveJobs(tx, opts.GPUType, after) {
				if !take(ij) {
					break
				}
			}
			return nil
		}
		scanOrder(tx, after, func(ij indexedJob) bool {
			if t := ij.entry.GPUType; opts.GPUType != "" && t != opts.GPUType && t != "" {
				return true // another type's: not decoded
			}
			return take(ij)
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list jobs: %w", err)
	}
	return jobs, nil
}

// decodeBoltJob decodes the record stored under key name. A record that is
// not a jobRecord in JSON, or that names another job than its key, is
// unreadable.
func decodeBoltJob(name string, v []byte) (jobRecord, error) {
	var rec jobRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return jobRecord{}, err
	}
	if rec.Name != name {
		return jobRecord{}, fmt.Errorf("the record names job %q, not %q", rec.Name, name)
	}
	return rec, nil
}

// readBoltJob returns the job stored under name, record v, with its
// progress, or, when its record does not decode, what can still be read
// of it (see Job.Unreadable).
func readBoltJob(tx *bolt.Tx, name string, v []byte) Job {
	rec, err := decodeBoltJob(name, v)
	if err != nil {
		return readPartial(tx, name, v, err).job()
	}
	j := decodeJob(rec)
	e, err := getProgress(tx, name)
	switch {
	case err != nil:
		p := partialJob{Name: name, Why: err.Error(), GPUType: j.Spec.GPUType, Status: j.Status.State.Status,
			SubmitTime: rec.Spec.SubmitTime}
		return p.job()
	case e.found:
		// A copy: the entry is valid only inside the transaction.
		j.Progress, j.ProgressRevision = bytes.Clone(e.data), e.revision
	}
	return j
}

// progressEntry is a job's entry in the progress bucket. A job without
// one (created before the bucket existed and given no report since) has
// its progress in its record, as the store kept it then.
type progressEntry struct {
	found    bool
	revision int64
	data     []byte // valid only inside the transaction
}

// getProgress reads job name's progress entry; an entry too short to hold
// a revision is an error.
func getProgress(tx *bolt.Tx, name string) (progressEntry, error) {
	v := tx.Bucket(progressBucket).Get([]byte(name))
	if v == nil {
		return progressEntry{}, nil
	}
	if len(v) < 8 {
		return progressEntry{}, fmt.Errorf("decode progress: an entry of %d bytes, shorter than its revision", len(v))
	}
	return progressEntry{found: true, revision: int64(binary.BigEndian.Uint64(v)), data: nilIfEmpty(v[8:])}, nil
}

// putProgress stores job name's progress entry.
func putProgress(tx *bolt.Tx, name string, revision int64, data []byte) error {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(data)), uint64(revision))
	return tx.Bucket(progressBucket).Put([]byte(name), append(v, data...))
}

// readPartial is partialBoltJob with the submit time of the job's index
// entry, when it has one: where the job is listed.
func readPartial(tx *bolt.Tx, name string, v []byte, err error) partialJob {
	p := partialBoltJob(name, v, err)
	if e, ok := getEntry(tx, name); ok {
		p.SubmitTime = e.Submit.ptr()
	}
	return p
}

// partialBoltJob reads what it can of an undecodable record, each field on
// its own so that one damaged part does not hide the others. Nothing can
// be read of bytes that are not a JSON object.
func partialBoltJob(name string, v []byte, err error) partialJob {
	p := partialJob{Name: name, Why: "decode record: " + err.Error()}
	var gpuType, status string
	if jsonAt(v, &gpuType, "spec", "gpuType") {
		p.GPUType = gpuType
	}
	if jsonAt(v, &status, "status", "state", "status") {
		p.Status = model.Status(status)
	}
	// A pointer, so that null reads as the zero time.
	var t *int64
	if jsonAt(v, &t, "spec", "submitTime") {
		p.SubmitTime = t
	}
	if t = nil; jsonAt(v, &t, "status", "finishTime") {
		p.FinishTime = t
	}
	var rev int64
	if jsonAt(v, &rev, "statusRev") {
		p.StatusRevision = rev
	}
	if rev = 0; jsonAt(v, &rev, "progressRev") {
		p.ProgressRevision = rev
	}
	return p
}

// jsonAt decodes the value at path in the JSON object v into out, and
// reports whether it could.
func jsonAt(v []byte, out any, path ...string) bool {
	for _, key := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return false
		}
		var ok bool
		if v, ok = obj[key]; !ok {
			return false
		}
	}
	return json.Unmarshal(v, out) == nil
}

func (s *boltStore) SetPriority(ctx context.Context, name string, priority int) error {
	err := s.updateJob(ctx, name, func(r *jobRecord) bool { r.Spec.Priority = priority; return true })
	if err != nil {
		return fmt.Errorf("store: set priority of job %s: %w", name, err)
	}
	return nil
}

func (s *boltStore) RequestDelete(ctx context.Context, name string) error {
	err := s.updateJob(ctx, name, func(r *jobRecord) bool { r.DeleteRequested = true; return true })
	if err != nil {
		return fmt.Errorf("store: request delete of job %s: %w", name, err)
	}
	return nil
}

// updateJob applies change to one stored job inside a batch; bbolt
// serialises write transactions, so the read-modify-write cannot lose a
// concurrent update of another field.
func (s *boltStore) updateJob(ctx context.Context, name string, change func(*jobRecord) bool) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	var found bool
	err := s.batch(func(tx *bolt.Tx) error {
		var err error
		found, err = modifyJob(tx.Bucket(jobsBucket), name, change)
		return err
	})
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	return nil
}

// modifyJob rewrites one job record in b with change applied, unless
// change returns false; it reports false if absent. An unreadable record
// is an error: there is nothing sound to change.
func modifyJob(b *bolt.Bucket, name string, change func(*jobRecord) bool) (bool, error) {
	v := b.Get([]byte(name))
	if v == nil {
		return false, nil
	}
	rec, err := decodeBoltJob(name, v)
	if err != nil {
		return true, fmt.Errorf("decode: %w", err)
	}
	if !change(&rec) {
		return true, nil
	}
	return true, putJob(b, rec)
}

// SaveProgress goes through db.Batch like every write, so the reports of
// many jobs arriving together share one commit and one fsync; the
// revision check and the write are in one transaction, which bbolt
// serialises with every other write. It writes only the job's progress
// entry: the record is decoded (an unreadable one refuses the write, as
// SetPriority does) but not rewritten, unless it still holds progress
// from before the progress bucket, which it then drops.
func (s *boltStore) SaveProgress(ctx context.Context, name string, data []byte, revision int64) (int64, error) {
	if err := s.gate.enter(ctx); err != nil {
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, err)
	}
	defer s.gate.leave()
	if err := checkProgressSize("progress", data); err != nil {
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, err)
	}
	var found, conflict bool
	err := s.batch(func(tx *bolt.Tx) error {
		// Set on every run: Batch may run this function again.
		found, conflict = false, false
		b := tx.Bucket(jobsBucket)
		v := b.Get([]byte(name))
		if found = v != nil; !found {
			return nil
		}
		rec, err := decodeBoltJob(name, v)
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		e, err := getProgress(tx, name)
		if err != nil {
			return err
		}
		stored := rec.ProgressRevision
		if e.found {
			stored = e.revision
		}
		if conflict = stored != revision; conflict {
			return nil
		}
		if rec.Progress != nil || rec.ProgressRevision != 0 {
			rec.Progress, rec.ProgressRevision = nil, 0
			if err := putJob(b, rec); err != nil {
				return err
			}
		}
		return putProgress(tx, name, revision+1, data)
	})
	switch {
	case err != nil:
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, err)
	case !found:
		return 0, fmt.Errorf("store: save progress of job %s: %w", name, ErrNotFound)
	case conflict:
		return 0, fmt.Errorf("store: save progress of job %s at revision %d: %w", name, revision, ErrConflict)
	}
	return revision + 1, nil
}

// putJob stores rec under its name.
func putJob(b *bolt.Bucket, rec jobRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return b.Put([]byte(rec.Name), v)
}

// putIndexedJob stores rec under its name and indexes it: for the writes
// that may change what the index holds of a job (its status).
func putIndexedJob(tx *bolt.Tx, rec jobRecord) error {
	if err := putJob(tx.Bucket(jobsBucket), rec); err != nil {
		return err
	}
	e := entryOf(rec)
	return reindex(tx, rec.Name, &e)
}

// SaveStatus encodes every status before writing any, so a bad one fails
// the call without a partial write, then checks and writes them all in
// one batch transaction: bbolt serialises write transactions, so no other
// write can come between a revision check and its write.
func (s *boltStore) SaveStatus(ctx context.Context, writes map[string]StatusWrite) (SaveResult, error) {
	if err := s.gate.enter(ctx); err != nil {
		return SaveResult{}, fmt.Errorf("store: save status: %w", err)
	}
	defer s.gate.leave()
	names, recs, err := encodeStatuses(writes)
	if err != nil {
		return SaveResult{}, fmt.Errorf("store: save status: %w", err)
	}
	if len(names) == 0 {
		return SaveResult{}, nil
	}
	var res SaveResult
	err = s.batch(func(tx *bolt.Tx) error {
		res = SaveResult{} // Batch may run this function again
		b := tx.Bucket(jobsBucket)
		for _, name := range names {
			v := b.Get([]byte(name))
			if v == nil {
				res.Missing = append(res.Missing, name)
				continue
			}
			w := writes[name]
			rec, err := decodeBoltJob(name, v)
			if err != nil || !rec.writable(w.Revision) {
				res.Conflicts = append(res.Conflicts, name)
				continue
			}
			rec.Status = recs[name]
			rec.StatusRevision = w.Revision + 1
			if err := putIndexedJob(tx, rec); err != nil {
				return fmt.Errorf("job %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return SaveResult{}, fmt.Errorf("store: save status: %w", err)
	}
	return res, nil
}

// SetAside reads and rewrites the record in one batch transaction, so no
// status write can come between the two.
func (s *boltStore) SetAside(ctx context.Context, name, reason string, now time.Time) error {
	if err := s.gate.enter(ctx); err != nil {
		return fmt.Errorf("store: set aside job %s: %w", name, err)
	}
	defer s.gate.leave()
	var e encoder
	at := e.time("now", now)
	if e.err != nil {
		return fmt.Errorf("store: set aside job %s: %w", name, e.err)
	}
	var found bool
	err := s.batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(jobsBucket)
		v := b.Get([]byte(name))
		if found = v != nil; !found {
			return nil
		}
		rec, err := decodeBoltJob(name, v)
		if err == nil {
			if !rec.Status.live() {
				return nil
			}
			rec.setAside(reason, at)
			if _, err := getProgress(tx, name); err != nil {
				// A damaged entry is replaced by an empty one at the
				// record's revision.
				if err := putProgress(tx, name, rec.ProgressRevision, nil); err != nil {
					return err
				}
			}
			return putIndexedJob(tx, rec)
		}
		p := readPartial(tx, name, v, err)
		if p.Status.Done() {
			return nil
		}
		// The progress is dropped, its revision kept (see asideRecord);
		// a damaged entry is replaced by an empty one at the record's.
		if e, err := getProgress(tx, name); err == nil && e.found {
			p.ProgressRevision = e.revision
		}
		rec = p.asideRecord(reason, at)
		// A copy: v is valid only inside the transaction.
		rec.Original = bytes.Clone(v)
		if err := putIndexedJob(tx, rec); err != nil {
			return err
		}
		return putProgress(tx, name, p.ProgressRevision, nil)
	})
	if err != nil {
		return fmt.Errorf("store: set aside job %s: %w", name, err)
	}
	if !found {
		return fmt.Errorf("store: set aside job %s: %w", name, ErrNotFound)
	}
	return nil
}

func (s *boltStore) DeleteJob(ctx context.Context, name string) error {
	if err := s.gate.enter(ctx); err != nil {
		return fmt.Errorf("store: delete job %s: %w", name, err)
	}
	defer s.gate.leave()
	var found bool
	err := s.batch(func(tx *bolt.Tx) error {
		if found = tx.Bucket(jobsBucket).Get([]byte(name)) != nil; !found {
			return nil
		}
		return deleteBoltJob(tx, name)
	})
	if err != nil {
		return fmt.Errorf("store: delete job %s: %w", name, err)
	}
	if !found {
		return fmt.Errorf("store: delete job %s: %w", name, ErrNotFound)
	}
	return nil
}

// deleteBoltJob removes job name's record, progress and index entries.
func deleteBoltJob(tx *bolt.Tx, name string) error {
	if err := tx.Bucket(progressBucket).Delete([]byte(name)); err != nil {
		return err
	}
	if err := tx.Bucket(jobsBucket).Delete([]byte(name)); err != nil {
		return err
	}
	return reindex(tx, name, nil)
}

// ListFinished reads the finished index from its start: the oldest.
func (s *boltStore) ListFinished(ctx context.Context, limit int) ([]FinishedJob, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list finished jobs: %w", err)
	}
	defer s.gate.leave()
	if err := checkFinishedLimit(limit); err != nil {
		return nil, fmt.Errorf("store: list finished jobs: %w", err)
	}
	var out []FinishedJob
	err := s.db.View(func(tx *bolt.Tx) error {
		jobs := tx.Bucket(jobsBucket)
		scanFinished(tx, func(ij indexedJob) bool {
			if jobs.Get([]byte(ij.name)) != nil {
				out = append(out, FinishedJob{Name: ij.name, FinishTime: decodeTime(ij.entry.Finish.ptr())})
			}
			return len(out) < limit
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list finished jobs: %w", err)
	}
	return out, nil
}

// CountJobs reads the counts the index keeps.
func (s *boltStore) CountJobs(ctx context.Context) (live, finished int, err error) {
	if err := s.gate.enter(ctx); err != nil {
		return 0, 0, fmt.Errorf("store: count jobs: %w", err)
	}
	defer s.gate.leave()
	err = s.db.View(func(tx *bolt.Tx) error {
		l, f := getCounts(tx)
		live, finished = int(l), int(f)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("store: count jobs: %w", err)
	}
	return live, finished, nil
}

// DeleteFinished decides from each job's index entry whether it is
// terminal, so it decodes no record, and deletes in one batch
// transaction, in which no status write can come between the check and
// the deletion.
func (s *boltStore) DeleteFinished(ctx context.Context, names []string) (int, error) {
	if err := s.gate.enter(ctx); err != nil {
		return 0, fmt.Errorf("store: delete finished jobs: %w", err)
	}
	defer s.gate.leave()
	if err := checkDeleteFinished(names); err != nil {
		return 0, fmt.Errorf("store: delete finished jobs: %w", err)
	}
	if len(names) == 0 {
		return 0, nil
	}
	var deleted int
	err := s.batch(func(tx *bolt.Tx) error {
		deleted = 0 // Batch may run this function again
		jobs := tx.Bucket(jobsBucket)
		for _, name := range names {
			e, ok := getEntry(tx, name)
			if !ok || e.Live || jobs.Get([]byte(name)) == nil {
				continue
			}
			if err := deleteBoltJob(tx, name); err != nil {
				return fmt.Errorf("job %s: %w", name, err)
			}
			deleted++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: delete finished jobs: %w", err)
	}
	return deleted, nil
}

func (s *boltStore) GetScheduler(ctx context.Context, gpuType string) (Scheduler, error) {
	if err := s.gate.enter(ctx); err != nil {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, err)
	}
	defer s.gate.leave()
	var rec schedulerRecord
	var found bool
	var decodeErr error
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(schedulersBucket).Get([]byte(gpuType))
		if found = v != nil; !found {
			return nil
		}
		decodeErr = json.Unmarshal(v, &rec)
		return nil
	})
	if err != nil {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, err)
	}
	if decodeErr != nil {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w record: %v", gpuType, ErrDamaged, decodeErr)
	}
	if !found {
		return Scheduler{}, fmt.Errorf("store: get scheduler %s: %w", gpuType, ErrNotFound)
	}
	return decodeScheduler(rec), nil
}

// ListSchedulers relies on bbolt iterating keys in byte order, which is
// Go's string order.
func (s *boltStore) ListSchedulers(ctx context.Context) ([]Scheduler, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list schedulers: %w", err)
	}
	defer s.gate.leave()
	var out []Scheduler
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(schedulersBucket).ForEach(func(k, v []byte) error {
			var rec schedulerRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return nil // damaged: left out (see Store)
			}
			out = append(out, decodeScheduler(rec))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: list schedulers: %w", err)
	}
	return out, nil
}

func (s *boltStore) PutSettings(ctx context.Context, gpuType string, set Settings) error {
	rec := encodeSettings(set)
	err := s.putScheduler(ctx, gpuType, func(r *schedulerRecord) { r.Settings = rec })
	if err != nil {
		return fmt.Errorf("store: put settings of %s: %w", gpuType, err)
	}
	return nil
}

func (s *boltStore) PutStatus(ctx context.Context, gpuType string, st SchedulerStatus) error {
	rec, err := encodeSchedulerStatus(st)
	if err == nil {
		err = s.putScheduler(ctx, gpuType, func(r *schedulerRecord) { r.Status = rec })
	}
	if err != nil {
		return fmt.Errorf("store: put status of %s: %w", gpuType, err)
	}
	return nil
}

// putScheduler creates or rewrites one scheduler record with change
// applied, keeping the half change does not touch.
func (s *boltStore) putScheduler(ctx context.Context, gpuType string, change func(*schedulerRecord)) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	if gpuType == "" {
		return errors.New("empty GPU type")
	}
	return s.batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(schedulersBucket)
		rec := schedulerRecord{GPUType: gpuType}
		if v := b.Get([]byte(gpuType)); v != nil {
			if err := json.Unmarshal(v, &rec); err != nil {
				// Damaged: this write replaces it.
				rec = schedulerRecord{GPUType: gpuType}
			}
		}
		change(&rec)
		v, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		return b.Put([]byte(gpuType), v)
	})
}

func (s *boltStore) SaveHistory(ctx context.Context, gpuType, app string, data []byte) error {
	if err := s.gate.enter(ctx); err != nil {
		return fmt.Errorf("store: save history of %q on %s: %w", app, gpuType, err)
	}
	defer s.gate.leave()
	if err := checkHistory(gpuType, data); err != nil {
		return fmt.Errorf("store: save history of %q on %s: %w", app, gpuType, err)
	}
	err := s.batch(func(tx *bolt.Tx) error {
		// bbolt copies the value into the transaction, and keeps an empty
		// one (read back as nil).
		return tx.Bucket(historiesBucket).Put([]byte(historyKey(gpuType, app)), nilIfEmpty(data))
	})
	if err != nil {
		return fmt.Errorf("store: save history of %q on %s: %w", app, gpuType, err)
	}
	return nil
}

// ListHistories scans the keys that start with the GPU type's prefix,
// which bbolt keeps together in byte order.
func (s *boltStore) ListHistories(ctx context.Context, gpuType string) (map[string][]byte, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("store: list histories of %s: %w", gpuType, err)
	}
	defer s.gate.leave()
	if gpuType == "" {
		return nil, errors.New("store: list histories: empty GPU type")
	}
	var out map[string][]byte
	prefix := []byte(typePrefix(gpuType))
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(historiesBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if out == nil {
				out = make(map[string][]byte)
			}
			// A copy: v is valid only inside the transaction.
			out[string(k[len(prefix):])] = nilIfEmpty(bytes.Clone(v))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list histories of %s: %w", gpuType, err)
	}
	return out, nil
}

// Close waits for calls in flight, then closes the file. It closes even
// when ctx is done: releasing the file lock matters more than the deadline.
func (s *boltStore) Close(ctx context.Context) error {
	if !s.gate.close() {
		return fmt.Errorf("store: close: %w", ErrClosed)
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}
