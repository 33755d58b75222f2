// Package service runs one GPU type's scheduler as a long-lived service:
// it rebuilds the scheduling core from the store on start, consumes the
// API's notifications from the queue, drives the core's loop on a clock,
// feeds the collector's estimates back, and persists every job's state,
// queue position and expected start after each cycle, so that a restarted
// (or killed) server resumes with nothing lost and nothing duplicated.
//
// The store is the source of truth; queue messages only say "look at job
// X" or "reload your settings", and a periodic resync reconciles the store
// with the core in case a notification was lost. Every job the service
// acts on is read on the scheduler loop, after everything the service
// itself wrote, and status writes are conditional on the job's status
// revision: a terminal status is final, so no older copy of a job can
// bring it back. A record that cannot be restored is set aside as Failed
// with its reason instead of stopping the others. Health reports a
// service that is recovering, wedged in one cycle, or failing to write.
package service
