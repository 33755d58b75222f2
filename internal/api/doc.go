// Package api is Voda's REST API: job submission (the original's MPIJob
// format, PyTorchJob, Voda annotations), listing, deletion and priority;
// per-GPU-type scheduler state, algorithm and rate limit; the original's
// routes for its users; Prometheus metrics and health probes.
//
// The API is stateless: it validates, names and stores jobs, then
// notifies the GPU type's scheduler through the queue. With an
// authenticator and an authorizer (internal/auth) every route but the
// health probes asks who the caller is and whether they may act (auth.go). The wire types in
// types.go are shared with the Go client the CLI uses.
package api
