// Package e2e holds Voda's end-to-end tests: the real `voda` binary
// started as a process, driven over HTTP, killed with SIGKILL and started
// again; and a load test of concurrent submissions. They run with the
// embedded store and queue, and against MongoDB (FerretDB) and RabbitMQ.
package e2e
