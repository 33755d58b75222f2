// Package livecluster is the simulated GPU cluster `voda server` drives by
// default: virtual nodes of one GPU type, and jobs that progress by a
// parametric performance model on a clock that may run faster than the
// wall clock. It implements the scheduler's Port, so the live scheduler
// service runs unchanged on it and on Kubernetes.
//
// Unlike package sim, which replays a whole workload as fast as it can,
// this cluster runs in real (scaled) time next to the REST API: jobs
// arrive when users submit them and finish when their work is done.
package livecluster
