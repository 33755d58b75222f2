// Package placement turns an allocation (job -> #GPUs) into a placement
// (job -> node -> #workers) on nodes of possibly different sizes. A job's
// workers hold G GPUs each (model.JobSpec.PerWorker), each on one node: k
// GPUs are k/G workers.
//
// A Placer never exceeds a node's capacity, reports every job it cannot
// place with a reason instead of dropping it, and is deterministic for the
// same input. Placers are listed explicitly in a Registry, like
// allocators.
package placement
