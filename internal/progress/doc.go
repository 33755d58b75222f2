// Package progress turns the reports training jobs send about themselves
// (docs/progress.md) into what Voda keeps of each job: the latest
// counters, the current generation, and the throughput measured per
// placement, which the scheduler's collector fits.
//
// The HTTP route and the simulated cluster both hand reports to the same
// Ingester, so a job measured on a real cluster and one on the simulated
// cluster are measured the same way. Ingest, the decision itself, is a
// pure function of the job's previous state, the report, the time it
// arrived and the job's allocation.
//
// A report's counters are cumulative, so a lost report costs nothing. A
// generation names the job's incarnation: a new one starts with every
// restart or resize. Within a generation counters never decrease; the
// first interval of a generation (start-up, checkpoint loading, warm
// caches) is not measured; an interval whose worker count is not the
// allocation's (a resize under way) is not measured either. The time from
// an allocation change to the first report of the new generation is the
// job's measured restart cost.
package progress
