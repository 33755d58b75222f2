// Package estimate turns what jobs measured into the estimates allocators
// decide from (model.Estimates: a speedup curve, the batch size for each
// worker count, the remaining time on one GPU and the restart cost). It is
// the one place that does: the simulator's engine, the scheduler service
// and the API all call it, so that what `voda simulate` predicts for a
// workload is what `voda server` does with the same jobs.
//
// An Estimator answers Estimate for one job at a time and forgets a job
// that left. Online is the estimator both the simulator and the server
// use; the simulator's oracle, which knows each job's true performance,
// is another implementation of the same interface.
//
// Online keeps two kinds of measurements per job and per application:
//
//   - throughput per placement (collector.Measurements: seconds, work and
//     restarts on each worker and node count), which Amdahl's law with a
//     node penalty fits (package collector);
//   - step times per configuration of placement and batch
//     (goodput.Config), which the Pollux-shaped throughput model fits
//     (package goodput), when the job declares its batch bounds.
//
// Its policy, chosen once on the simulator's evidence (docs/progress.md,
// "One estimator"):
//
//   - A job with a step-time model (its own, or its application's before
//     it has run) gets the goodput curve: for k workers packed onto as
//     few nodes as hold them, the best batch's goodput over the best on
//     one GPU, and that batch. Its remaining time is its remaining steps
//     of the initial batch over the goodput on one GPU.
//   - Application priors: a job's model is fitted with its application's
//     pooled fit as the prior, and a job not yet measured uses the
//     application's fit as it is. Without them the Pollux workloads' mean
//     JCT is 20% longer at 1.0x load and 34% at 2.0x.
//   - A ramp: a goodput curve reaches at most twice the most workers the
//     job was measured on, and at least the most any job of its
//     application was measured on, as Pollux ramps jobs up. It costs
//     nothing at 1.0x, saves 2% at 2.0x and halves the simulator's time.
//   - A job with no step times but measured throughput (it reports epochs
//     and no batch) gets Amdahl's law fitted to its placements, with its
//     application's fit as the prior, up to its maximum workers.
//   - A job nothing is known of gets a linear curve up to the ramp when it
//     declares its batch (the first placement should measure as wide as
//     the evidence allows), and Amdahl's law with collector.DefaultSerial
//     otherwise, and an unknown remaining time (-1).
//   - The restart cost is the job's measured mean, else its application's.
//   - Jobs whose workers hold several GPUs pool with the jobs of their
//     application and of the same GPUs per worker only (AppKey), and
//     their throughput is kept per placement in workers, nodes and pods
//     (collector.PlacementRate.Pods).
//
// Online with StepModels off is the Amdahl estimator alone, which `voda
// simulate --estimator amdahl` replays.
//
// Nothing here reads a clock or iterates a map in an order that shows:
// the same measurements give the same estimates in any process.
package estimate
