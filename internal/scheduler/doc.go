// Package scheduler is the per-GPU-type scheduling core.
//
// Core holds one GPU type's jobs and nodes and runs cycles: snapshot,
// requeue (multi-level algorithms), allocate, check invariants, place, and
// apply the difference through a Port in the order halt -> shrink ->
// migrate -> start -> grow. It never reads the wall clock: every method
// takes the time from its caller, so the simulator drives it on a virtual
// clock and the live system on a real one.
//
// Events (arrival, completion, failure, deletion, priority change, node
// added or removed) mark the core dirty; Due says when the next cycle
// should run under the rate limit, the periodic tick and the backoff after
// failed actions. Loop wraps a Core for the live system and is the one
// door into it: callers hand it functions (Do) that run on its goroutine,
// between cycles, and it sleeps on a timer until the next cycle is due;
// once it has stopped, Do says so instead of waiting.
package scheduler
