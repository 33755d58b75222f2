// Package placement turns an allocation (job -> #GPUs) into a placement
// (job -> node -> #workers) on nodes of possibly different sizes.
//
// A Placer never exceeds a node's capacity, reports every job it cannot
// place with a reason instead of dropping it, and is deterministic for the
// same input. Placers are listed explicitly in a Registry, like
// allocators.
package placement
