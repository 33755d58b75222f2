package report

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// syntheticRun plays a toy cluster in 60 s steps, so that plots and
// summaries have realistic-looking input: jobs arrive with exponential
// gaps, each needs work GPU-seconds, and every step the policy hands out
// GPUs in arrival order. elastic gives every job at least one GPU and
// shares the rest up to twice the request; otherwise a job runs with
// exactly its request or waits.
func syntheticRun(algorithm string, seed uint64, jobs, gpus int, elastic bool) *Run {
	rng := rand.New(rand.NewPCG(seed, 1))
	type job struct {
		JobResult
		work, left float64
		held       int
	}
	js := make([]*job, jobs)
	t := 0.0
	for i := range js {
		t += rng.ExpFloat64() * 150
		req := []int{1, 1, 1, 2, 2, 4, 8}[rng.IntN(7)]
		work := float64(req) * math.Exp(math.Log(300)+rng.Float64()*(math.Log(6*3600)-math.Log(300)))
		js[i] = &job{
			JobResult: JobResult{
				Name: "job-" + strconv.Itoa(i), App: []string{"bert", "ncf", "cifar10"}[i%3],
				Submit: math.Round(t), Start: -1, End: -1,
				MinWorkers: 1, MaxWorkers: 2 * req, Requested: req,
			},
			work: work, left: work,
		}
	}
	run := &Run{Algorithm: algorithm, Workload: "synthetic", GPUs: gpus, WallSeconds: 1.5}
	const step = 60.0
	now := 0.0
	for done := 0; done < jobs; now += step {
		// Progress with the current allocation.
		for _, j := range js {
			if j.held == 0 || j.Done {
				continue
			}
			j.GPUSeconds += step * float64(j.held)
			j.left -= step * float64(j.held)
			if j.left <= 0 {
				j.Done, j.End = true, now+step
				done++
			}
		}
		// Allocate.
		free := gpus
		want := map[*job]int{}
		var queue []*job
		for _, j := range js {
			if j.Submit <= now+step && !j.Done {
				queue = append(queue, j)
			}
		}
		for _, j := range queue {
			n := j.Requested
			if elastic {
				n = 1
			}
			if n <= free {
				want[j] = n
				free -= n
			}
		}
		for elastic && free > 0 {
			gave := false
			for _, j := range queue {
				if w, ok := want[j]; ok && w < j.MaxWorkers && free > 0 {
					want[j]++
					free--
					gave = true
				}
			}
			if !gave {
				break
			}
		}
		for _, j := range js {
			w := want[j]
			if w == j.held {
				continue
			}
			if j.held > 0 && w > 0 {
				j.Restarts++
			}
			if j.Start < 0 && w > 0 {
				j.Start = now + step
			}
			j.held = w
			run.Changes = append(run.Changes, Change{Time: now + step, Job: j.Name, GPUs: w})
		}
	}
	run.EndTime = now
	for _, j := range js {
		run.Jobs = append(run.Jobs, j.JobResult)
	}
	return run
}
