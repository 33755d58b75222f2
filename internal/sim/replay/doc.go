// Package replay replays a workload against a running Voda server: it
// submits each job through the REST API (internal/api/client) at its
// submission time on the server's virtual clock, waits until all are
// done and reads them back as a report.Run, so that the server's job
// completion times can be set beside the simulator's for the same
// workload and settings (Simulate). `voda workload replay` is its
// command; docs/simulator.md, "Replaying against a server", says which
// settings the two share and where they still differ.
package replay
