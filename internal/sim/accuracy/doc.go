// Package accuracy measures how well the collector (internal/collector)
// predicts an application's throughput on placements it has not seen,
// against the Pollux artifact's profiles (issue 14).
//
// A simulation of one Pollux workload records the placements its jobs ran
// on, per category (application and global batch size, the collector's
// own grouping). The collector is then fed one observation per visited
// placement, at the profile's rate there, and predicts every (workers,
// nodes) placement the profile measured; Evaluate reports the absolute
// percentage errors against the profile, with the node penalty and
// without it (Amdahl's law alone, as before the penalty).
//
// Rates are compared at one epoch, the middle one of the application's
// default training: the Pollux rates are progress per second and include
// statistical efficiency, which changes them up to tenfold from epoch to
// epoch at the same placement, a change the collector's model of
// placements does not try to describe. At one epoch the comparison is of
// the placement model alone.
package accuracy
