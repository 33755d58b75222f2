// Package collector turns progress observations into the estimates
// allocators use: a speedup curve and the remaining time on one GPU.
//
// Observations are (workers, seconds, work done) triples. Per worker
// count the collector keeps the observed rate; it fits Amdahl's law,
// k/rate(k) = (1 + s(k-1)) / rate(1), by least squares over the counts
// seen, which gives both the one-GPU rate and the serial fraction s. A job
// seen at one count only borrows s from other jobs of its application, or
// assumes DefaultSerial. A job not seen at all borrows its application's
// fit; with nothing known at all the curve is Amdahl's law with
// DefaultSerial and the remaining time is unknown. Work is in whatever unit the caller uses (epochs, samples,
// simulator progress), as long as remaining work is given in the same unit.
package collector
