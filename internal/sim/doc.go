// Package sim is Voda's trace-driven simulator. It drives the same
// scheduling core as the live system (internal/scheduler) through a
// simulated cluster port on a virtual clock: jobs arrive from a workload,
// progress by a performance model on the placement they are given, pay a
// restart cost on every re-placement, and complete.
//
// Two modes exist. With a fixed interval (60 s reproduces the Pollux
// artifact) the clock advances in steps: all jobs progress, then one
// scheduling cycle sees every job submitted and not finished. Without one,
// the simulation is event-driven: arrivals, completions and the core's own
// rate limit and tick decide when cycles run, exactly as in production.
//
// Run replays one workload with one allocator and placer; a Comparison
// replays workloads under several algorithms and placers, several runs at
// a time, as 'voda simulate' does.
package sim
