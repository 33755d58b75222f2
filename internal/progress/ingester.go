package progress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vodascheduler/voda/internal/store"
)

// ErrFinished is the error of a report for a job that has finished (or
// whose record cannot be read): nothing is kept.
var ErrFinished = errors.New("the job has finished")

// ErrBusy is the error of a report that was not applied because others
// were writing its job's state: more than MaxWaiting of the job's reports
// already waited in this process, or another writer (another API
// replica) saved the state between every read and write of maxConflicts
// tries in a row. Nothing is kept; the sender may try again shortly.
var ErrBusy = errors.New("busy with the job's other reports")

// maxConflicts bounds the tries of a report that raced another write of
// the same job's state. An Ingester's reports of one job take turns
// (jobLocks), so a conflict comes from another writer: another process,
// or another Ingester of this one.
const maxConflicts = 5

// DefaultMaxWaiting is the reports of one job that may wait for their
// turn while another is applied. A job has one reporter, its rank 0, and
// two for a moment after a Horovod reset; more is a flood, refused
// rather than queued.
const DefaultMaxWaiting = 8

// Store is what an Ingester needs of the store.
type Store interface {
	GetJob(ctx context.Context, name string) (store.Job, error)
	SaveProgress(ctx context.Context, name string, data []byte, revision int64) (int64, error)
}

// Clock gives the time reports arrive.
type Clock interface{ Now() time.Time }

// Reply is the answer to a report (docs/progress.md).
type Reply struct {
	Job                   string       `json:"job"`
	Used                  bool         `json:"used"`
	Reason                string       `json:"reason,omitempty"`
	Allocation            ReplyWorkers `json:"allocation"`
	ReportIntervalSeconds int          `json:"reportIntervalSeconds"`
	// Batch is the batch size advised for the allocation, for a job that
	// declared an adaptive batch size (nil otherwise).
	Batch *ReplyBatch `json:"batch,omitempty"`
}

// ReplyBatch is the batch size a reply advises (docs/progress.md).
type ReplyBatch struct {
	Size              int     `json:"size"`
	LocalSize         int     `json:"localSize"`
	AccumulationSteps int     `json:"accumulationSteps"`
	LRScale           float64 `json:"lrScale"`
}

// ReplyWorkers is the allocation a reply carries.
type ReplyWorkers struct {
	Workers int `json:"workers"`
}

// Sink takes checked reports: an Ingester.
type Sink interface {
	Ingest(ctx context.Context, name string, r Report) (Reply, error)
}

var _ Sink = (*Ingester)(nil)

// Ingester keeps reports: it applies each to its job's stored state and
// writes the result back, under the state's revision so that two writers
// never lose each other's reports.
type Ingester struct {
	Store Store
	Clock Clock
	// Interval is the time between reports Voda asks for
	// (DefaultInterval seconds if zero).
	Interval time.Duration
	Logger   *slog.Logger
	// MaxWaiting bounds the reports of one job that wait while another is
	// applied (DefaultMaxWaiting if zero); a report beyond is ErrBusy.
	MaxWaiting int
	// Conflicts, if not nil, counts the revision conflicts met: another
	// writer (another replica, or another Ingester of this process, such
	// as the log reader's) saved the job's state between a report's read
	// and its write. Each is retried.
	Conflicts interface{ Inc() }

	locks jobLocks
}

// Ingest applies a checked report to job name. The reports of one job
// take turns. Errors: store.ErrNotFound (no such job), ErrFinished, a
// *FieldError (the report contradicts what the job reported before),
// ErrBusy, or a store failure.
func (in *Ingester) Ingest(ctx context.Context, name string, r Report) (Reply, error) {
	return in.IngestRead(ctx, name, r, nil)
}

// IngestRead is Ingest for a caller that has just read the job (j, or nil
// if it has not): its first try uses that copy instead of reading the
// record again, unless it had to wait for its turn; a concurrent write
// makes it read afresh.
func (in *Ingester) IngestRead(ctx context.Context, name string, r Report, read *store.Job) (Reply, error) {
	maxWaiting := in.MaxWaiting
	if maxWaiting <= 0 {
		maxWaiting = DefaultMaxWaiting
	}
	turn, waited, err := in.locks.lock(ctx, name, maxWaiting)
	if err != nil {
		return Reply{}, fmt.Errorf("progress of job %s: %w", name, err)
	}
	defer in.locks.unlock(name, turn)
	if waited {
		read = nil // the report before this one changed the state
	}
	for range maxConflicts {
		var j store.Job
		if read != nil {
			j, read = *read, nil
		} else {
			var err error
			if j, err = in.Store.GetJob(ctx, name); err != nil {
				return Reply{}, err
			}
		}
		if j.Unreadable != "" || j.Status.State.Status.Done() {
			return Reply{}, ErrFinished
		}
		prev := in.decode(name, j.Progress)
		alloc := Allocation{Workers: j.Status.State.GPUs, ChangedAt: j.Status.State.LastChange, Nodes: j.Status.State.Placement.Nodes(),
			Pods:  j.Status.State.GPUs / j.Spec.PerWorker(),
			Batch: j.Status.Est.BatchAt(j.Status.State.GPUs), Fit: j.Status.Fit}
		next, out, ferr := Ingest(prev, r, in.Clock.Now(), alloc)
		if ferr != nil {
			return Reply{}, ferr
		}
		data, err := json.Marshal(next)
		if err != nil {
			return Reply{}, fmt.Errorf("progress of job %s: %w", name, err)
		}
		_, err = in.Store.SaveProgress(ctx, name, data, j.ProgressRevision)
		if errors.Is(err, store.ErrConflict) {
			if in.Conflicts != nil {
				in.Conflicts.Inc()
			}
			continue
		}
		if err != nil {
			return Reply{}, err
		}
		interval := in.Interval
		if interval <= 0 {
			interval = DefaultInterval * time.Second
		}
		reply := Reply{Job: name, Used: out.Used, Reason: out.Reason, Allocation: ReplyWorkers{alloc.Workers},
			ReportIntervalSeconds: int(interval.Round(time.Second) / time.Second)}
		if a := out.Advice; a != nil {
			reply.Batch = &ReplyBatch{Size: a.Size, LocalSize: a.LocalSize, AccumulationSteps: a.AccumulationSteps, LRScale: a.LRScale}
		}
		return reply, nil
	}
	return Reply{}, fmt.Errorf("progress of job %s: another writer saved it first %d times in a row: %w", name, maxConflicts, ErrBusy)
}

// decode reads a stored state; a state that cannot be read starts over
// (logged), so that one damaged record does not refuse every report.
func (in *Ingester) decode(name string, data []byte) *State {
	s, err := Decode(data)
	if err != nil && in.Logger != nil {
		in.Logger.Warn("stored progress cannot be read; starting over", "job", name, "err", err)
	}
	return s
}

// Decode reads a job's stored state: nil, nil when it has none.
func Decode(data []byte) (*State, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode progress: %w", err)
	}
	if err := s.Measured.Validate(); err != nil {
		return nil, fmt.Errorf("decode progress: %w", err)
	}
	if s.Goodput != nil && !s.Goodput.Valid() {
		s.Goodput = nil // measured again from the next reports
	}
	return &s, nil
}
