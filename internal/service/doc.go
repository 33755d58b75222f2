// Package service runs one GPU type's scheduler as a long-lived service:
// it rebuilds the scheduling core from the store on start, consumes the
// API's notifications from the queue, drives the core's loop on a clock,
// feeds the collector's estimates back, and persists every job's state,
// queue position and expected start after each cycle, so that a restarted
// (or killed) server resumes with nothing lost and nothing duplicated.
//
// The store is the source of truth; queue messages only say "look at job
// X" or "reload your settings", and a periodic resync reconciles the store
// with the core in case a notification was lost.
package service
