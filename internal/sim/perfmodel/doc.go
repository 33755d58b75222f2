// Package perfmodel holds the simulator's job performance models: how fast
// a job of an application trains on a given placement.
//
// Two kinds exist. Profiled models replay measurements: the Pollux OSDI'21
// artifact's step times per placement and per-epoch gradient statistics
// (see docs/simulator.md for the model). Parametric models need no data:
// an Amdahl-style scaling curve with a cross-node penalty, for duration-only
// traces and generated workloads.
//
// Progress is measured in model units: a job finishes epoch e when its
// cumulative progress reaches EpochProgress(e). Rate returns progress per
// second.
package perfmodel
