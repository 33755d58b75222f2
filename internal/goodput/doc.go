// Package goodput estimates how fast an elastic job makes statistical
// progress on a placement and a batch size, and chooses the batch size
// that makes the most of a placement.
//
// Goodput is throughput times statistical efficiency. Throughput follows
// the shape Pollux (OSDI'21) gives a data-parallel step: compute that
// grows linearly with the per-replica (atomic) batch, synchronisation that
// is zero on one replica, grows linearly with the replicas, and costs more
// once the replicas span nodes, and an exponent for how much of the two
// overlap:
//
//	compute(a)  = αc + βc·a
//	sync(n, r)  = 0 (r = 1); αr + βr·(r−2) (n = 1); αn + βn·(r−2) (n > 1)
//	step        = (compute^γ + sync^γ)^(1/γ)
//	iteration   = accum·compute + step
//
// with accum extra gradient-accumulation steps when the local batch does
// not fit one step. Params holds the seven numbers; Fit finds them from
// measured iteration times by least squares on the logarithm, pulled
// towards a prior (an application's pooled fit, or a generic one) so that
// a job measured on one placement still has a complete model.
//
// Statistical efficiency follows the gradient noise scale: with the
// gradient's squared norm and variance measured at the job's initial batch
// size, a batch scale times larger makes (var+sqr)/(var/scale+sqr) times
// the progress per step. Best picks, for a placement, the batch among
// about fifty geometric candidates between the job's bounds that makes
// progress fastest; Curve turns that into the speedup curve allocators
// read, with the batch size that goes with each worker count. A Table
// keeps the candidates' predicted step times, which do not depend on the
// gradient statistics, so that a job's curve and batch for its next
// epoch's statistics cost a division per candidate; Plans keep, for the
// tables of jobs with the same bounds, the candidates and how each
// splits, which do not depend on the model either.
//
// Estimator keeps the measurements of live jobs and of applications,
// refits only when a new measurement disagrees with the model
// (RefitTolerance, AppRefitTolerance), and
// records how well the model predicted each placement before the job ran
// on it. Nothing here reads a clock or iterates a map in an order that
// shows: the simulator and the live system get the same answers.
package goodput
