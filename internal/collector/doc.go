// Package collector turns progress observations into the estimates
// allocators use: a speedup curve and the remaining time on one GPU.
//
// Observations are (workers, nodes, seconds, work done). The collector
// sums them per placement, a (workers, nodes) pair, in Measurements:
// seconds, work, the intervals summed and the sum of their squared rates
// (for the spread). A placement with nodes unknown (0) is its own key and
// counts as one node in the fit. Measurements also time restarts, from a
// resize to the first report of the new generation. They are plain data,
// encoded as JSON; Validate checks what is decoded from storage.
//
// The fit is Amdahl's law with a node penalty,
//
//	k/rate(k, n) = a + b(k-1) + c(n-1) = (1 + s(k-1) + p(n-1)) / rate(1, 1),
//
// by least squares over the placements seen, each weighted equally; it
// gives the one-GPU rate 1/a, the serial fraction s = b/a (at least
// MinSerial, at most 1) and the node penalty p = c/a. The penalty is fitted,
// with c >= 0, only when the placements identify it: three or more, on two
// node counts or more, not in proportion to the worker counts. With every
// placement on one node (or nodes unknown) the fit is the straight line
// the collector has always fitted. A job whose data leave the serial
// fraction (one worker count) or the penalty unknown borrows them from its
// application, or assumes DefaultSerial and no penalty. A job not measured
// at all borrows its application's fit; with nothing known at all the
// curve is Amdahl's law with DefaultSerial and the remaining time is
// unknown. Estimate's curve is for k workers on as few nodes as hold them
// (SetGPUsPerNode), the placement the placer aims at.
//
// An application's fit uses its base (SetApp; what its finished jobs
// left) plus the measurements of its live jobs (SetJob, Observe). Forget
// moves a finished job into the base, which App returns for storing: a
// restart of Voda sets the bases and the live jobs again and has the same
// estimates. A job belongs to the application it was last named with.
//
// Measured rates are claims, from the jobs' own pods (plausible.go): no
// fit believes a superlinear speedup (SuperlinearTolerance); a job's
// placement far faster than linear scaling of its application's best rate
// per GPU (OutlierRatio) stays out of the job's fit until confirmed (ConfirmIntervals reports over
// ConfirmSeconds); and each live job counts in its application's history,
// and in the base it leaves, within OutlierRatio of the other sources'
// median, so that one job cannot move it further.
//
// The collector holds no clock and does no I/O. Its results depend on no
// map order: the same measurements set in any order give the same
// estimates; observations of one placement summed in another order may
// differ by rounding only.
//
// Work is in whatever unit the caller uses (epochs, samples, simulator
// progress), as long as remaining work is given in the same unit.
package collector
