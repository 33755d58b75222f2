// Package report turns a simulation run into what people read: a summary
// (text and JSON), a per-job CSV, a comparison table across algorithms and
// plots (JCT CDF per algorithm, GPUs held per job over time), plus a
// progress bar for long runs. It sits outside the simulator's deterministic
// core: only the progress bar looks at the wall clock.
package report
