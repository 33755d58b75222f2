// Package model holds Voda's domain types: job specs and state, nodes,
// snapshots the scheduler hands to allocators and placers, and the
// allocations and placements they answer with.
//
// It imports only the standard library and never reads the wall clock, so
// the live scheduler and the simulator share it unchanged.
package model
