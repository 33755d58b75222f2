// Package workload reads simulator workloads: the Pollux artifact's CSV,
// Voda's own CSV format, and duration-only traces
// (job_id,submission_time,duration,num_gpu). Every reader returns the same
// Job records, sorted by submit time then name, and rejects bad input with
// the line, the field and the reason (a *LineError). It also generates
// deterministic synthetic workloads (Generate). The formats are described
// in docs/workloads.md.
package workload
