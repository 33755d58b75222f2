// Package server assembles a Voda server process from a Config: the store,
// the queue, the clock, the metrics, one scheduler service per GPU type on
// a simulated cluster or on Kubernetes (there under leader election), and
// the REST API. `voda server` maps its flags to a Config and calls Run;
// a test can start a whole server the same way, without the CLI.
//
// The package knows nothing of the simulator: with ClusterSim the caller
// supplies the simulated cluster (Config.SimPool) and its performance
// models, so a Kubernetes server carries no simulator code paths.
package server
