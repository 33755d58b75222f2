// Tiresias: discretized two-dimensional least-attained-service (2D-LAS)
// with two priority queues, from J. Gu et al., "Tiresias: A GPU Cluster
// Manager for Distributed Deep Learning", USENIX NSDI 2019.
//
// Requeue (in snapshot order): a job in queue 0 whose QueueService
// (GPU-seconds attained since it last entered queue 0) reaches threshold
// moves to queue 1. If starvation > 0, a job in a queue >= 1 that holds no
// GPUs, has a non-zero WaitingSince and a positive QueueRunSeconds, and has
// waited at least starvation x QueueRunSeconds is promoted to queue 0
// (the paper's starvation-prevention promotion). The scheduler applies the changes,
// stamping QueueSince, so a moved job joins the back of its new queue.
//
// Allocate: jobs are ordered by (Queue, QueueSince, model.Before); in that
// order a job gets its RequestedWorkers if they fit in what is left of the
// cluster's GPUs, else nothing (and loses what it had). This is exactly the
// policy the Pollux OSDI'21 artifact runs as "Tiresias" when
// threshold=57600 and starvation=0.
//
// Deviations from the paper: two queues, not K; the service compared with
// the threshold is the GPU-seconds attained since the job last entered
// queue 0 (the scheduler resets it on promotion); no consolidation or
// placement-sensitivity profiling: Allocate checks only the total and the
// placer spreads a job over nodes when it must.

package algorithm

import (
	"fmt"
	"math"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

// NameTiresias is Tiresias' registered name.
const NameTiresias = "Tiresias"

// Default Tiresias parameters, as in Voda: demote after one GPU-hour of
// service, promote a job that has waited 8x its last run.
const (
	DefaultTiresiasThreshold  = 3600.0
	DefaultTiresiasStarvation = 8.0
)

// Tiresias is two-queue discretized 2D-LAS over requested GPU counts.
type Tiresias struct {
	las lasQueues
	t   tracker
}

var (
	_ Allocator   = (*Tiresias)(nil)
	_ Prioritizer = (*Tiresias)(nil)
)

// NewTiresias is Tiresias' factory. Parameters: threshold (GPU-seconds of
// queue-0 service before demotion, default 3600) and starvation (promote a
// queue-1 job after waiting this many times its last run; 0 disables;
// default 8).
func NewTiresias(p *registry.Params) (Allocator, error) {
	las, err := readLASParams(p)
	if err != nil {
		return nil, err
	}
	return &Tiresias{las: las}, nil
}

// Name returns NameTiresias.
func (*Tiresias) Name() string { return NameTiresias }

// Requeue implements Prioritizer.
func (t *Tiresias) Requeue(snap *model.Snapshot) []model.QueueChange { return t.las.requeue(snap) }

// Allocate implements Allocator.
func (t *Tiresias) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	t.t.mu.Lock()
	defer t.t.mu.Unlock()
	in, order, err := queueOrder(&t.t, snap)
	if err != nil {
		return model.Allocation{}, err
	}
	gpus, _ := firstFit(order, in.total, in.req)
	return in.allocation(order, gpus), nil
}

// lasQueues holds the queue rules that Tiresias and ElasticTiresias share.
type lasQueues struct {
	threshold  float64
	starvation float64
}

func readLASParams(p *registry.Params) (lasQueues, error) {
	threshold, err := p.Float("threshold", DefaultTiresiasThreshold)
	if err != nil {
		return lasQueues{}, err
	}
	if math.IsNaN(threshold) || threshold < 0 {
		return lasQueues{}, fmt.Errorf("param threshold: %v must be a number >= 0", threshold)
	}
	starvation, err := p.Float("starvation", DefaultTiresiasStarvation)
	if err != nil {
		return lasQueues{}, err
	}
	if math.IsNaN(starvation) || starvation < 0 {
		return lasQueues{}, fmt.Errorf("param starvation: %v must be a number >= 0", starvation)
	}
	return lasQueues{threshold: threshold, starvation: starvation}, nil
}

// requeue returns the demotions and promotions due, in snapshot order.
func (q lasQueues) requeue(snap *model.Snapshot) []model.QueueChange {
	if snap == nil {
		return nil
	}
	var changes []model.QueueChange
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		st := &j.State
		switch {
		case st.Queue == 0 && st.QueueService >= q.threshold:
			changes = append(changes, model.QueueChange{Job: j.Spec.Name, Queue: 1})
		case q.starvation > 0 && st.Queue >= 1 && st.GPUs == 0 && !st.WaitingSince.IsZero() &&
			st.QueueRunSeconds > 0 && snap.Now.Sub(st.WaitingSince).Seconds() >= q.starvation*st.QueueRunSeconds:
			changes = append(changes, model.QueueChange{Job: j.Spec.Name, Queue: 0})
		}
	}
	return changes
}

// queueOrder is the tracker's check, plus non-negative queues, and the
// jobs in queue order (Queue, QueueSince, arrival). Queues are checked
// while the sort keys are read, so the jobs are walked once for both.
func queueOrder(t *tracker, snap *model.Snapshot) (*input, []int, error) {
	var bad *model.Job
	in, err := t.check(snap, t.keyed(jobKey(func(j *model.Job) sortKey {
		if j.State.Queue < 0 && bad == nil {
			bad = j
		}
		return queueKey(j)
	})), false)
	if err != nil {
		return nil, nil, err
	}
	if bad != nil {
		t.reset()
		return nil, nil, fmt.Errorf("job %s: negative queue %d", bad.Spec.Name, bad.State.Queue)
	}
	return in, t.sorted(in, nil), nil
}
