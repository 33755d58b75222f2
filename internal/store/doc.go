// Package store keeps Voda's jobs and per-GPU-type scheduler records
// durably, so a restarted server resumes where it stopped.
//
// Store is the interface; Open picks an implementation from a URL. The
// embedded default (a bbolt file under the data directory) needs no
// server; the MongoDB implementation (official Go driver) is for the
// production deployment. One contract suite (storetest) runs against both.
//
// Three rules keep recovery safe; Store's methods give the details.
//
// Status writes are conditional. Each job carries a StatusRevision that
// every status write increments. SaveStatus writes a status only over the
// revision its writer read, and never over a terminal status (Completed,
// Failed, Canceled), which is final whatever the revision. A scheduler
// working from a stale copy (a resync that raced a job's end, a leader
// that lost its lease) therefore cannot revive a finished job or undo a
// newer status: SaveStatus reports its write as a conflict, not an error,
// and the writer should re-read the job.
//
// No single record stops recovery. A job record that cannot be decoded is
// returned by GetJob and ListJobs with Job.Unreadable saying why and what
// could still be read (GPU type, status), instead of failing the call. A
// scheduler sets such a record aside (SetAside): it becomes a Failed job
// with Status.Reason ReasonUnrestorable, and the original bytes stay in the
// stored record for an operator to inspect.
//
// A damaged embedded store fails Open cleanly. Before using the file, Open
// checks its meta pages, its size against the size they record, and its
// structure (bbolt's consistency check), and a truncated or corrupt file
// gives an error wrapping ErrDamaged that names the file and says what to
// do, where bbolt alone would crash the process or silently fall back on
// an older transaction.
//
// What is read often costs what it returns, not what the store holds, so
// that finished jobs can pile up for months: listing live jobs (every
// scheduler's resync, the API's event stream) reads only live ones, a page
// of the job list (ListOptions.Limit and After) reads about a page, and
// retention reads the oldest finished jobs (ListFinished), counts jobs
// (CountJobs) and deletes finished ones in bounded batches
// (DeleteFinished), all through indexes: MongoDB's own; in the embedded
// store, buckets written in the same transaction as the jobs (see
// boltindex.go), which Open builds for a file that has none.
//
// Besides, the store keeps what the progress reports of training jobs
// build up, as bytes it never interprets: each job's progress state
// (Job.Progress, written by SaveProgress over the ProgressRevision its
// writer read, so two reports handled at once cannot undo each other) and
// each application's history per GPU type (SaveHistory, ListHistories).
package store
