// Package api is Voda's REST API: job submission (the original's MPIJob
// format, PyTorchJob, Voda annotations), listing, deletion and priority;
// per-GPU-type scheduler state, algorithm and rate limit; the original's
// routes for its users; Prometheus metrics and health probes.
//
// The API is stateless: it validates, names and stores jobs, then
// notifies the GPU type's scheduler through the queue. The wire types in
// types.go are shared with the Go client the CLI uses.
//
// With an authenticator and an authorizer (internal/auth), every route but
// the health probes first asks who the caller is and whether they may act
// (auth.go); see docs/security.md.
package api
