// Package soak runs one `voda server` through many months' worth of short
// jobs in minutes, with everything that lives beside it for months: a
// steady stream of submissions with bursts, dashboards reading the event
// stream, dashboards that stopped reading, training jobs reporting their
// progress (several racing on one job), retention removing finished jobs,
// and people listing jobs. It records the server's memory, store, jobs,
// latencies, stream lag and CPU over time, writes them as a table, a CSV
// and a PNG of the curves under $VODA_ARTIFACTS (default .cache/artifacts
// in the repository), and asserts what must hold in any run, never a
// timing target (docs/server.md, "Soak").
//
// The sizes come from the environment. The defaults are the small run that
// `make test` includes (2,000 jobs, under two minutes); `make soak`
// runs the full one (100,000 jobs over ten minutes):
//
//	VODA_SOAK_JOBS          jobs submitted (default 2000)
//	VODA_SOAK_DURATION      time over which they are submitted (default 40s)
//	VODA_SOAK_BURST         jobs in one burst; about 30% of the jobs come in bursts (default 200)
//	VODA_SOAK_SPEED         the server's --speed (default 500)
//	VODA_SOAK_NODES         the server's --sim-nodes (default v100=64x8)
//	VODA_SOAK_MAX_FINISHED  the server's --max-finished-jobs (default 500)
//	VODA_SOAK_DASHBOARDS    event-stream clients that read (default 3)
//	VODA_SOAK_STALLED       event-stream clients that never read, per wave (default 1)
//	VODA_SOAK_REPORTERS     progress reporters, 4 reports a second each, and a race of 12 on one job every 5 s (default 3)
//	VODA_SOAK_INTERVAL      time between two samples (default 5s)
//	VODA_SOAK_SIM_REPORTS   keep the simulated cluster's own progress reports (default false)
//
// The server runs without authentication, so every stream is one
// caller's: the defaults hold at most 4 streams at once (3 dashboards and
// a stalled one), within any per-caller stream limit; when the server has
// --max-event-streams-per-user, the soak sets it to what its streams need.
package soak
