// Package metrics defines Voda's Prometheus metrics: the original's set
// (jobs created, deleted, completed and failed; reschedules and their
// duration; allocator and placement duration; jobs ready, waiting and
// running; GPUs and GPUs in use; workers migrated; launchers restarted;
// jobs spanning nodes), with one label gpu_type instead of one metric name
// per GPU type, plus the API's request counts and latencies, per-job
// progress and waiting gauges, and what monitoring needs to alert on: the
// last cycle's time, failed store writes, and leadership per GPU type
// (docs/monitoring.md).
package metrics
