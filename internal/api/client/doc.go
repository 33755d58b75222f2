// Package client is the Go client of Voda's REST API (internal/api): job
// submission, listing, deletion and priority; per-GPU-type scheduler
// state, algorithm and rate limit; the algorithm registry. The voda CLI's
// create, get, describe, delete and set commands are built on it.
//
// Answers decode into the wire types of internal/api. A 4xx or 5xx answer
// is an *APIError carrying the server's reason, offending field and
// message; a server that cannot be reached is a *ConnectionError.
//
// A server that authenticates callers takes a bearer token
// (WithBearerToken); one that serves HTTPS with a certificate of a
// private authority is verified against that authority (WithCAFile).
package client
