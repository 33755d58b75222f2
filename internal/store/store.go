package store

import (
	"context"
	"errors"
	"time"

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
)

// Job is one training job as stored. It has two owners, written through
// different methods so neither overwrites the other: the API owns the
// fields set at creation plus Priority (in Spec) and DeleteRequested; the
// scheduler owns Status.
type Job struct {
	// Name is the unique key (the user's name plus a timestamp suffix).
	Name string
	// Kind is the manifest's kind: "MPIJob" or "PyTorchJob".
	Kind string
	// Manifest is the submitted manifest as JSON, with the name rewritten.
	Manifest []byte
	// Spec is what the scheduler needs; Spec.Priority may change later.
	Spec model.JobSpec
	// Model names the performance model the simulated cluster runs the job
	// with; empty means the cluster's default.
	Model string
	// DeleteRequested is set when a user deleted the job; the scheduler
	// then halts it and records it Canceled.
	DeleteRequested bool
	// Status is the scheduler's view of the job.
	Status JobStatus
	// StatusRevision counts the writes of Status: 0 until a scheduler
	// first writes it. SaveStatus writes a status only over the revision
	// its writer read, so a writer working from a stale copy (a resync
	// that raced a job's end, a scheduler that lost its leadership)
	// cannot overwrite a newer status.
	StatusRevision int64
	// Unreadable, when not empty, says why the stored record could not be
	// decoded; only Name, and Spec.GPUType where it could be read, are
	// set. ListJobs and GetJob return such records rather than failing,
	// so that one damaged record cannot hide or block the others; the
	// scheduler sets them aside (SetAside).
	Unreadable string
}

// JobStatus is the part of a job the scheduler writes.
type JobStatus struct {
	// State is the core's state (status, GPUs, placement, attained
	// service, queue, time counters).
	State model.JobState
	// Est is the collector's latest estimate.
	Est model.Estimates
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

// ListOptions filters ListJobs. The zero value lists every job.
type ListOptions struct {
	// GPUType, if set, keeps only jobs of that type.
	GPUType string
	// Live keeps only jobs whose status is not terminal.
	Live bool
}

// Settings are a GPU type's run-time scheduler settings, written by the
// API and read by that type's scheduler.
type Settings struct {
	// Algorithm is an algorithm registry name; empty means the default.
	Algorithm string
	// Params are the algorithm's parameters as key=value strings.
	Params map[string]string
	// RateLimit is the least time between two cycles; zero means default.
	RateLimit time.Duration
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
type Store interface {
	// CreateJob inserts a new job; ErrExists if the name is taken, even
	// by a finished job.
	CreateJob(ctx context.Context, j Job) error
	// GetJob returns a job; ErrNotFound if absent.
	GetJob(ctx context.Context, name string) (Job, error)
	// ListJobs returns matching jobs ordered by Spec.SubmitTime, then Name.
	ListJobs(ctx context.Context, opts ListOptions) ([]Job, error)
	// SetPriority changes Spec.Priority; ErrNotFound if absent.
	SetPriority(ctx context.Context, name string, priority int) error
	// RequestDelete sets DeleteRequested; ErrNotFound if absent.
	RequestDelete(ctx context.Context, name string) error
	// SaveStatus replaces the Status of each named job in one call, so a
	// scheduler writes a whole cycle at once. Jobs not found are skipped
	// and their names returned; other fields are never touched.
	SaveStatus(ctx context.Context, statuses map[string]JobStatus) (missing []string, err error)
	// DeleteJob removes a job record entirely; ErrNotFound if absent.
	DeleteJob(ctx context.Context, name string) error

	// GetScheduler returns a GPU type's record; ErrNotFound if none was
	// ever written.
	GetScheduler(ctx context.Context, gpuType string) (Scheduler, error)
	// ListSchedulers returns every record ordered by GPU type.
	ListSchedulers(ctx context.Context) ([]Scheduler, error)
	// PutSettings creates or replaces a GPU type's settings, leaving its
	// status untouched.
	PutSettings(ctx context.Context, gpuType string, s Settings) error
	// PutStatus creates or replaces a GPU type's status, leaving its
	// settings untouched.
	PutStatus(ctx context.Context, gpuType string, s SchedulerStatus) error

	// Close releases the store; later calls return ErrClosed.
	Close(ctx context.Context) error
}
