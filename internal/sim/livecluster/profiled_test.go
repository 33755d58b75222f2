package livecluster

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/polluxdata"
)

func newProfiledPool(t *testing.T) (*SimPool, *testingclock.FakeClock, *perfmodel.Set) {
	t.Helper()
	models, err := perfmodel.Load(polluxdata.Traces(t))
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(t0)
	c, err := New(Options{GPUType: "v100", Nodes: 4, GPUsPerNode: 4, RestartCost: 30 * time.Second, Models: models, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return c, clk, models
}

func latest(t *testing.T, c *SimPool, job string) progress.Report {
	t.Helper()
	for _, r := range c.Reports() {
		if r.Job == job {
			return r.Report
		}
	}
	t.Fatalf("no report of %s", job)
	return progress.Report{}
}

// A profiled job reports what a trainer measures, bounds included, and
// follows the batch size its replies advise: at once in a new
// generation, else from its next epoch.
func TestProfiledJobReportsAndFollowsAdvice(t *testing.T) {
	c, clk, models := newProfiledPool(t)
	if err := c.Track("a", "cifar10", 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	m, _ := models.Get("cifar10")
	prof := m.(*perfmodel.Profiled)
	initBatch, maxBatch, minLocal, _ := prof.BatchLimits()
	start(t, c, "a", model.NodeWorkers{Node: "v100-node-00", Workers: 2})
	if reps := c.Reports(); len(reps) != 0 {
		t.Fatalf("reports during the restart: %+v", reps)
	}
	clk.Step(40 * time.Second)
	r := latest(t, c, "a")
	first := min(max(initBatch, 2*minLocal), maxBatch) // the smallest batch 2 workers allow
	if r.GlobalBatchSize < int64(first) || r.GlobalBatchSize >= int64(first+2) || r.StepSeconds <= 0 || r.Steps <= 0 || r.Samples <= 0 ||
		r.Batch.Init != int64(initBatch) || r.Batch.Max != int64(maxBatch) || r.GradSqNorm == nil || r.GradVariance == nil ||
		r.Workers != 2 || r.Nodes != 1 || r.TotalEpochs != float64(prof.DefaultEpochs()) {
		t.Fatalf("report %+v, want global batch %d on 2 workers with cifar10's bounds %d-%d and gradient statistics", r, first, initBatch, maxBatch)
	}
	gen := r.Generation
	advise := func(size int) {
		c.Advise("a", gen, progress.Reply{Allocation: progress.ReplyWorkers{Workers: 2}, Batch: &progress.ReplyBatch{Size: size}})
	}
	advise(1024) // the generation's first reply: taken at once
	if got := latest(t, c, "a").GlobalBatchSize; got != 1024 {
		t.Fatalf("global batch %d after the first advice, want 1024", got)
	}
	advise(2048) // later advice waits for the epoch's end
	if got := latest(t, c, "a").GlobalBatchSize; got != 1024 {
		t.Fatalf("global batch %d right after the second advice, want still 1024", got)
	}
	epoch := latest(t, c, "a").Epoch
	for i := 0; i < 10000 && latest(t, c, "a").Epoch < float64(int(epoch)+1); i++ {
		clk.Step(time.Second)
	}
	if got := latest(t, c, "a").GlobalBatchSize; got != 2048 {
		t.Fatalf("global batch %d after an epoch's end, want the advised 2048", got)
	}
	// A reply to an earlier generation changes nothing.
	start(t, c, "a", model.NodeWorkers{Node: "v100-node-00", Workers: 2})
	c.Advise("a", gen, progress.Reply{Allocation: progress.ReplyWorkers{Workers: 2}, Batch: &progress.ReplyBatch{Size: 4096}})
	clk.Step(31 * time.Second)
	if got := latest(t, c, "a").GlobalBatchSize; got != 2048 {
		t.Fatalf("global batch %d after a stale reply, want 2048 (advised for 2 workers before the restart)", got)
	}
}

// The cluster's job finishes when the simulator's progress says the same
// job on the same placement does: restart, then every epoch at its rate.
func TestProfiledJobFinishesWhenTheSimulatorSays(t *testing.T) {
	c, clk, models := newProfiledPool(t)
	if err := c.Track("b", "ncf", 0, 1, 0); err != nil { // pinned: its batch never changes
		t.Fatal(err)
	}
	m, _ := models.Get("ncf")
	want := sim.NewJobProgress("b", m, 32768, 0)
	want.Place([]int{1}, 30)
	secs, err := want.FinishIn()
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = c.Run(ctx, func(string, model.Status) { finished <- clk.Now() })
	}()
	start(t, c, "b", model.NodeWorkers{Node: "v100-node-01", Workers: 1})
	waitUntil(t, clk.HasWaiters)
	clk.Step(time.Duration(secs*float64(time.Second)) + time.Millisecond)
	select {
	case at := <-finished:
		if d := at.Sub(t0).Seconds(); d < secs || d > secs+0.01 {
			t.Fatalf("finished after %.3f s, want %.3f s", d, secs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not finish")
	}
}
