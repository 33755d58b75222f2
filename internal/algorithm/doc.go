// Package algorithm decides how many GPUs each job gets.
//
// An Allocator is a pure function of a model.Snapshot: deterministic (ties
// by submit time, then name), it never mutates its input and returns an
// error rather than panicking. Allocators that keep jobs in priority queues
// also implement Prioritizer, which the scheduler calls before Allocate to
// move jobs between queues.
//
// The Registry lists every algorithm explicitly; there are no init-time
// side effects. To add an algorithm, implement Allocator and call
// Registry.Register with a Factory (see docs/algorithms.md).
package algorithm
