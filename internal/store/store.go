package store

import (
	"context"
	"errors"
	"time"

	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/model"
)

// Errors every implementation returns (wrapped), so callers can test with
// errors.Is whichever store is configured.
var (
	// ErrNotFound: no job (or scheduler) by that name.
	ErrNotFound = errors.New("not found")
	// ErrExists: CreateJob with a name already taken.
	ErrExists = errors.New("already exists")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
	// ErrDamaged: Open found the embedded store's file damaged (truncated
	// or corrupt), and the error names the file and what to do; or
	// GetScheduler found a scheduler record it cannot decode.
	ErrDamaged = errors.New("damaged")
	// ErrConflict: SaveProgress over a ProgressRevision that is no longer
	// the stored one; the caller re-reads the job and retries.
	ErrConflict = errors.New("revision conflict")
)

// MaxProgressBytes bounds a job's Progress and an application's history:
// SaveProgress, SaveHistory and CreateJob refuse more.
const MaxProgressBytes = 256 << 10

// Job is one training job as stored. It has two owners, written through
// different methods so neither overwrites the other: the API owns the
// fields set at creation plus Priority (in Spec), DeleteRequested and
// Progress; the scheduler owns Status.
type Job struct {
	// Name is the unique key (the user's name plus a timestamp suffix).
	Name string
	// Kind is the manifest's kind: jobspec.KindMPIJob or KindPyTorchJob.
	Kind jobspec.Kind
	// Namespace is the namespace the job belongs to and runs in: its
	// manifest's metadata.namespace. A record stored before namespaces
	// were recorded reads it from the manifest.
	Namespace string
	// Manifest is the submitted manifest as JSON, with the name rewritten.
	Manifest []byte
	// Spec is what the scheduler needs; Spec.Priority may change later.
	Spec model.JobSpec
	// Model names the performance model the simulated cluster runs the job
	// with; empty means the cluster's default.
	Model string
	// Application names what the job trains (its vodascheduler/application
	// annotation); empty when the user named none.
	Application string
	// ProgressLog is the job's vodascheduler/progress-log pattern, which
	// finds its progress in its launcher's log; empty for none.
	ProgressLog string
	// DeleteRequested is set when a user deleted the job; the scheduler
	// then halts it and records it Canceled.
	DeleteRequested bool
	// Status is the scheduler's view of the job.
	Status JobStatus
	// StatusRevision counts the writes of Status: CreateJob stores it as
	// given (callers pass 0), and every write SaveStatus or SetAside makes
	// adds one. SaveStatus writes a status only over the revision its
	// writer read, so a writer working from a stale copy (a resync that
	// raced a job's end, a scheduler that lost its leadership) cannot
	// overwrite a newer status. A record stored before revisions existed
	// reads as revision 0.
	StatusRevision int64
	// Progress is the job's progress state as the progress ingestion
	// keeps it (the latest report, the generation, measured throughput):
	// opaque bytes, JSON by convention, which the store never interprets;
	// nil if none. At most MaxProgressBytes. Written by SaveProgress (and
	// stored as given by CreateJob, whose callers pass nil); no other
	// write touches it.
	Progress []byte
	// ProgressRevision counts the writes of Progress: CreateJob stores it
	// as given (callers pass 0), and every write SaveProgress makes adds
	// one. SaveProgress writes only over the revision its writer read. A
	// record stored before progress existed reads as revision 0 with nil
	// Progress.
	ProgressRevision int64
	// Unreadable, when not empty, says why the stored record could not be
	// decoded. Only Name (also copied to Spec.Name) is then certain;
	// Spec.GPUType and Status.State.Status are set when those parts could
	// still be read, and are empty otherwise; every other field is zero.
	// ListJobs and GetJob return such records rather than failing, so
	// that one damaged record cannot hide or block the others; the
	// scheduler sets them aside (SetAside). Unreadable is never stored.
	Unreadable string
}

// JobStatus is the part of a job the scheduler writes.
type JobStatus struct {
	// State is the core's state (status, GPUs, placement, attained
	// service, queue, time counters).
	State model.JobState
	// Est is the collector's latest estimate.
	Est model.Estimates
	// Fit is the throughput model the scheduler's estimator fitted for a
	// job with an adaptive batch size (nil for other jobs, and until one
	// is fitted): with it the job's progress reports are answered with
	// the batch size of most goodput for the report's own gradient
	// statistics, as the simulator's jobs choose theirs at every epoch,
	// rather than with the statistics of the scheduler's last cycle
	// (docs/progress.md).
	Fit *goodput.Params
	// Progress is the fraction of the job's work done, in [0, 1], as of
	// the last checkpoint the cluster reported.
	Progress float64
	// QueuePosition is the job's place among waiting jobs of its GPU type
	// in the order the algorithm would serve them (1 = next); 0 when not
	// waiting.
	QueuePosition int
	// EstimatedStart is when a waiting job is expected to get GPUs; zero
	// when unknown or not waiting.
	EstimatedStart time.Time
	// FinishTime is when the job reached a terminal status; zero before.
	FinishTime time.Time
	// Updated is the scheduler's clock when it wrote this status.
	Updated time.Time
	// Reason is a one-word CamelCase cause of the status where one helps
	// (a job waiting because no cluster could ever hold it:
	// ReasonUnschedulable; a record set aside: ReasonUnrestorable); empty
	// otherwise. Message says the same for people.
	Reason  string
	Message string
	// Allocations are the job's placements over time, oldest first: each
	// holds from its At until the next one's (the last until now). Only
	// the newest MaxAllocations are kept; the first kept is therefore not
	// always the job's first start. Written by the scheduler with
	// AppendAllocation; nil for a job that never held GPUs.
	Allocations []Allocation
}

// MaxAllocations bounds JobStatus.Allocations: AppendAllocation drops the
// oldest beyond it, and SaveStatus refuses more.
const MaxAllocations = 64

// Allocation is one change of a job's GPUs: from At, it held Placement
// (nil: no GPUs).
type Allocation struct {
	At        time.Time
	Placement model.JobPlacement
}

// AppendAllocation returns h with an entry for p at at, if p differs from
// h's last placement (a job that never held GPUs gets no entry for
// holding none), keeping the newest MaxAllocations. h is not modified.
func AppendAllocation(h []Allocation, at time.Time, p model.JobPlacement) []Allocation {
	last := model.JobPlacement(nil)
	if len(h) > 0 {
		last = h[len(h)-1].Placement
	}
	if last.Equal(p) {
		return h
	}
	out := make([]Allocation, 0, min(len(h)+1, MaxAllocations))
	out = append(out, h[max(len(h)+1-MaxAllocations, 0):]...)
	var cp model.JobPlacement
	if len(p) > 0 {
		cp = p.Clone()
	}
	return append(out, Allocation{At: at, Placement: cp})
}

// Reasons a JobStatus may carry.
const (
	// ReasonUnschedulable: the job waits but needs more GPUs than its GPU
	// type's nodes have in all; it starts only if nodes are added.
	ReasonUnschedulable = "Unschedulable"
	// ReasonUnrestorable: the stored record could not be decoded or
	// restored, so its scheduler set it aside as Failed.
	ReasonUnrestorable = "Unrestorable"
	// ReasonUnreadable: the API's view of a record that could not be
	// decoded and was not yet set aside.
	ReasonUnreadable = "Unreadable"
)

// StatusWrite is one job's status as its scheduler writes it.
type StatusWrite struct {
	Status JobStatus
	// Revision is the StatusRevision of the writer's copy of the job. The
	// write is made only if the stored job still has that revision; it
	// then sets StatusRevision to Revision+1.
	Revision int64
}

// SaveResult says which writes of a SaveStatus call were not made. Each
// list is nil when empty.
type SaveResult struct {
	// Missing are the names (sorted) with no job.
	Missing []string
	// Conflicts are the names (sorted) whose stored status was not
	// replaced: its StatusRevision is not the one the writer read, or it
	// is terminal (Completed, Failed, Canceled: a terminal status is final
	// and no write replaces it, whatever its revision), or the record is
	// unreadable.
	Conflicts []string
}

// ListOptions filters and pages ListJobs. The zero value lists every job.
//
// An unreadable record (Job.Unreadable) is kept unless what could be read
// of it excludes it: it matches GPUType if its GPU type could be read and
// is equal, or could not be read at all (so that whichever scheduler
// serves the type finds it); it matches Live unless its status could be
// read and is terminal.
type ListOptions struct {
	// GPUType, if set, keeps only jobs of that type.
	GPUType string
	// Live keeps only jobs whose status is not terminal.
	Live bool
	// Limit, if positive, keeps only the first Limit matching jobs (of
	// those after After); 0 keeps all, and a negative Limit is an error.
	Limit int
	// After, unless zero, keeps only the jobs that come after it in
	// ListJobs' order. To list page by page, pass the Position of the
	// last job of the previous page: no job is then listed twice or
	// skipped, unless it was created or deleted in between (a job
	// created since is listed if it comes after the position). The zero
	// Position comes before every job, so it lists from the first.
	After Position
}

// Position is a place in ListJobs' order: jobs come after it if their
// Spec.SubmitTime is later (as time.Time.Compare has it: the zero time is
// in year 1), or equal with a Name greater in byte order. Any time will
// do, even one no job can have (before 1677-09-21, after 2262-04-11).
type Position struct {
	SubmitTime time.Time
	Name       string
}

// Position returns j's place in ListJobs' order, which a page that ends
// with j passes as the next page's ListOptions.After.
func (j Job) Position() Position { return Position{SubmitTime: j.Spec.SubmitTime, Name: j.Name} }

// FinishedJob is a terminal job as ListFinished returns it.
type FinishedJob struct {
	Name string
	// FinishTime is the job's Status.FinishTime: zero for a job that
	// finished without one (created terminal) or whose record cannot be
	// decoded and has no readable finish time.
	FinishTime time.Time
}

// MaxDeleteFinished bounds the names of one DeleteFinished call, so that
// one call is one bounded write.
const MaxDeleteFinished = 1000

// Settings are a GPU type's run-time scheduler settings, written by the
// API and read by that type's scheduler.
type Settings struct {
	// Algorithm is an algorithm registry name; empty means the default.
	Algorithm string
	// Params are the algorithm's parameters as key=value strings.
	Params map[string]string
	// RateLimit is the least time between two cycles; zero means default.
	RateLimit time.Duration
	// Quotas are the teams' quotas on this GPU type, sorted by team, names
	// unique; a team not named has model.DefaultQuota.
	Quotas []model.Quota
}

// SchedulerStatus is what a GPU type's scheduler reports about itself,
// written after every cycle.
type SchedulerStatus struct {
	// Now is the scheduler's clock when it wrote this; a restarted
	// scheduler never lets its clock go below it.
	Now time.Time
	// LastCycle is when the last cycle ran; zero if none.
	LastCycle time.Time
	Cycles    int64
	Nodes     int
	GPUs      int
	GPUsInUse int
	// Jobs counts live jobs by status.
	Waiting int
	Running int
	// NodeStates are the GPU type's nodes as the scheduler last saw them,
	// sorted by name, so that an API process without the scheduler can
	// show them; nil when none. Which job holds which GPU is in the jobs'
	// placements.
	NodeStates []NodeState
	// Teams are the GPU type's teams with live jobs, sorted by name, as
	// the last cycle divided the GPUs among them; nil when none.
	Teams []TeamState
}

// TeamState is one team's share of a GPU type at the last cycle.
type TeamState struct {
	Team string
	// GPUs are the GPUs its jobs hold; Entitled what the last cycle
	// entitled it to (its quota's guarantee, its share of the rest);
	// Demand what its jobs want (the sum of their maximums).
	GPUs, Entitled, Demand int
	// Running and Waiting count its live jobs.
	Running, Waiting int
}

// NodeState is one node of a GPU type as its scheduler saw it.
type NodeState struct {
	Name string
	// GPUs is the node's allocatable GPU count.
	GPUs int
	// Cordoned nodes (unschedulable) keep their workers but take no new
	// ones.
	Cordoned bool
	// NotReady nodes are known to the cluster but hold no workers of
	// Voda's until they are ready again.
	NotReady bool
}

// Scheduler is one GPU type's stored record.
type Scheduler struct {
	GPUType  string
	Settings Settings
	Status   SchedulerStatus
}

// Store keeps jobs and scheduler records durably. Implementations are safe
// for concurrent use. They must not depend on transactions or change
// streams (FerretDB has neither).
//
// What comes back is what went in, normalised the same way by every
// implementation (package storetest checks it): times are the same instant
// to the nanosecond, in UTC, with the zero time kept zero; times before
// 1677-09-21 or after 2262-04-11 (outside int64 nanoseconds) are rejected;
// empty slices, maps and byte strings come back nil; NaN and ±Inf survive.
// A done ctx fails a call before it writes anything.
//
// A job's status has one writer at a time, its scheduler, yet a writer
// may work from a stale copy: SaveStatus therefore writes only over the
// revision the writer read, and never over a terminal status, which is
// final. A stored record that cannot be decoded (written by another
// version, edited by hand, damaged on disk) does not fail reads: GetJob
// and ListJobs return it marked Unreadable, so recovery goes on and the
// scheduler can set it aside (SetAside).
type Store interface {
	// CreateJob inserts a new job; ErrExists if the name is taken, even
	// by a finished job.
	CreateJob(ctx context.Context, j Job) error
	// GetJob returns a job; ErrNotFound if absent. A record that cannot
	// be decoded is returned with Unreadable set, not as an error.
	GetJob(ctx context.Context, name string) (Job, error)
	// ListJobs returns matching jobs ordered by Spec.SubmitTime, then Name
	// (see Position), at most opts.Limit of them from opts.After on.
	// Records that cannot be decoded are returned with Unreadable set, and
	// never fail the call; such a record is returned with the submit time
	// the store can still read of it (the embedded store: the one it
	// indexed the record under), and ordered by it, or with the zero
	// time, first, when there is none.
	//
	// Its cost does not grow with the jobs it does not return: with Live,
	// it reads only live jobs (with GPUType too, only those of the type
	// and those whose type could not be read); a page (Limit) reads about
	// Limit records after a seek, plus, with GPUType and without Live,
	// those of other types it passes over (the embedded store skips them
	// without decoding them). FerretDB, which uses no index, scans the
	// whole collection for every query.
	//
	// MongoDB: a document whose spec.submitTime holds anything but what
	// the store writes (a 64-bit integer or null), which only a hand edit
	// makes, is not placed by the server where it is returned (a string
	// sorts after every number), so it is listed only without Limit and
	// After, never in a page.
	ListJobs(ctx context.Context, opts ListOptions) ([]Job, error)
	// SetPriority changes Spec.Priority; ErrNotFound if absent.
	SetPriority(ctx context.Context, name string, priority int) error
	// RequestDelete sets DeleteRequested; ErrNotFound if absent.
	RequestDelete(ctx context.Context, name string) error
	// SaveStatus writes each job's status where its revision matches, in
	// one call so a scheduler writes a whole cycle at once; other fields
	// are never touched. Writes not made are reported in SaveResult, not
	// as an error; each one made sets the job's StatusRevision to the
	// write's Revision+1. A status that cannot be stored (a time out of
	// range) fails the call before anything is written. Any other error
	// may leave some writes made (the embedded store makes all or none);
	// the caller should re-read the jobs.
	SaveStatus(ctx context.Context, writes map[string]StatusWrite) (SaveResult, error)
	// SetAside marks a job record its scheduler cannot restore: the record
	// becomes a Failed job whose Status.Reason is ReasonUnrestorable and
	// Status.Message is reason, with FinishTime and Updated set to now,
	// GPUs and placement cleared (QueuePosition and EstimatedStart too, as
	// a Failed job does not wait; if it held GPUs, LastChange becomes now and
	// an allocation without GPUs at now ends its Allocations)
	// and StatusRevision incremented; every field that can still be read
	// is kept. An unreadable record is replaced by one holding its name
	// (Name and Spec.Name), what could be read (GPU type; submit time, as
	// ListJobs returned it) and the original bytes (kept in the stored
	// record under "original", for an operator to inspect; not returned
	// in Job). A record already terminal is left
	// as it is, even an unreadable one whose status reads as terminal: a
	// finished job stays finished. ErrNotFound if absent.
	SetAside(ctx context.Context, name, reason string, now time.Time) error
	// DeleteJob removes a job record entirely, whatever its status (with
	// its progress, and from every index); ErrNotFound if absent.
	DeleteJob(ctx context.Context, name string) error

	// ListFinished returns up to limit (positive) terminal jobs
	// (Completed, Failed, Canceled), oldest FinishTime first (the zero
	// time first), then by name: the order a retention loop deletes them
	// in. It reads an index, so its cost grows with limit, not with the
	// jobs. A record that cannot be decoded is terminal if its status
	// could be read as terminal (MongoDB: if its live flag is false).
	ListFinished(ctx context.Context, limit int) ([]FinishedJob, error)
	// CountJobs returns how many jobs are live and how many terminal, as
	// ListJobs with Live and ListFinished would count them, without
	// reading the records: the embedded store keeps both counts, MongoDB
	// counts index entries.
	CountJobs(ctx context.Context) (live, finished int, err error)
	// DeleteFinished removes the records (and progress) of the named jobs
	// that are terminal, as ListFinished sees them, and returns how many
	// it removed; names of live or missing jobs are skipped, so a live
	// job named by mistake is left alone. More than MaxDeleteFinished
	// names fail the call before anything is deleted. The embedded store
	// deletes them in one transaction; MongoDB in one command, each
	// deletion atomic on its own.
	DeleteFinished(ctx context.Context, names []string) (int, error)
	// SaveProgress replaces the job's Progress with data if its stored
	// ProgressRevision is revision, and returns the new revision,
	// revision+1. ErrNotFound if absent; ErrConflict if the revision is
	// not the stored one (nothing is written: the caller re-reads and
	// retries). Data longer than MaxProgressBytes fails the call before
	// anything is written. No other field is touched, and no other write
	// touches Progress or ProgressRevision; the job's status is not
	// looked at, so a finished job's last report is written too. A
	// record that cannot be decoded (not yet set aside) is treated as
	// SetPriority treats it: the embedded store refuses the write with an
	// error; MongoDB makes it over a matching revision, yet GetJob goes on
	// returning the record unreadable, without Progress. SetAside keeps
	// the revision such a record reached, and a record SetAside replaced
	// takes writes as any other. Concurrent calls share commits, so many
	// jobs' reports cost few disk syncs.
	SaveProgress(ctx context.Context, name string, data []byte, revision int64) (int64, error)

	// SaveHistory creates or replaces the history of application app (an
	// empty app is allowed: jobs without an application) on GPU type
	// gpuType (not empty): opaque bytes of at most MaxProgressBytes,
	// which the store never interprets.
	SaveHistory(ctx context.Context, gpuType, app string, data []byte) error
	// ListHistories returns every application's history on gpuType, by
	// application; nil if none. An empty history comes back nil.
	ListHistories(ctx context.Context, gpuType string) (map[string][]byte, error)

	// GetScheduler returns a GPU type's record; ErrNotFound if none was
	// ever written, ErrDamaged if it cannot be decoded.
	GetScheduler(ctx context.Context, gpuType string) (Scheduler, error)
	// ListSchedulers returns every record ordered by GPU type, leaving
	// out those that cannot be decoded, so that one damaged record does
	// not hide the others.
	ListSchedulers(ctx context.Context) ([]Scheduler, error)
	// PutSettings creates or replaces a GPU type's settings, leaving its
	// status untouched. Writing a half replaces it whole, so a damaged
	// record is repaired by its next writes (the scheduler's status every
	// cycle, an operator's settings); bbolt may drop the other half of a
	// record it cannot decode.
	PutSettings(ctx context.Context, gpuType string, s Settings) error
	// PutStatus creates or replaces a GPU type's status, leaving its
	// settings untouched.
	PutStatus(ctx context.Context, gpuType string, s SchedulerStatus) error

	// Close releases the store; later calls return ErrClosed.
	Close(ctx context.Context) error
}
