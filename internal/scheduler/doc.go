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
// should run under the rate limit and the periodic tick. Loop wraps a Core
// for the live system: an unbounded event queue that never blocks a
// sender, and a timer, with no busy-waiting.
package scheduler
