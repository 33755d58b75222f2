// Package api is Voda's REST API: job submission (the original's MPIJob
// format, PyTorchJob, Voda annotations), listing, deletion and priority;
// per-GPU-type scheduler state, algorithm and rate limit; the original's
// routes for its users; Prometheus metrics and health probes.
//
// The API is stateless: it validates, names and stores jobs, then
// notifies the GPU type's scheduler through the queue. The wire types in
// types.go are shared with the Go client the CLI uses.
//
// Handlers return an error rather than write one: an httpError (a status,
// a typed Reason, the field at fault) or any other error, which
// writeError answers as a logged 500 (errors.go). The event stream's
// source is internal/eventhub; request bodies are read with
// internal/strictjson.
//
// With an authenticator and an authorizer (internal/auth), every route but
// the health probes first asks who the caller is and whether they may act
// (auth.go); see docs/security.md.
package api
