package kube

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/test/vodatest"
)

// TestKillRestart kills the scheduler with -9 while jobs run, restarts
// it, and checks that every job is still there exactly once, placed as
// the store says, and runs to completion.
func TestKillRestart(t *testing.T) {
	c := newCluster(t, "restart-gpu", 2, 4)
	srv := c.start()
	vc := srv.Client()
	var jobs []string
	for i, done := range []time.Duration{40 * time.Second, 45 * time.Second, 50 * time.Second} {
		jobs = append(jobs, submit(t, vc, mpiJob.manifest(fmt.Sprintf("job%d", i), c.gpuType, 2, 4, done)))
	}
	before := map[string]map[string]int{}
	for _, j := range jobs {
		before[j] = c.waitPlaced(t, vc, mpiJob, j, -1).Placement
	}

	srv.Kill()
	srv.Start()
	vc = srv.Client()
	// The restarted scheduler adopts every object as it is: same worker
	// count, same nodes.
	for _, j := range jobs {
		got := c.waitPlaced(t, vc, mpiJob, j, -1)
		if !equalCounts(got.Placement, before[j]) {
			t.Errorf("job %s: placement %v before the kill, %v after", j, before[j], got.Placement)
		}
	}
	checkObjects(t, mpiJob, c.ns, jobs)
	for _, j := range jobs {
		waitStatus(t, vc, j, "Completed")
	}
	checkObjects(t, mpiJob, c.ns, jobs)
	vodatest.WaitFor(t, "no pod left gated or pending", 30*time.Second, func() (bool, error) {
		return noStrandedPods(t.Context(), c.ns)
	})
}

// TestLeaderFailover runs two replicas sharing MongoDB (FerretDB) and
// RabbitMQ. The leader of the GPU type's Lease is killed with -9; the
// other takes over, rebuilds its state from the store and the cluster,
// keeps the running jobs as they are and schedules a new one.
func TestLeaderFailover(t *testing.T) {
	c := newCluster(t, "ha-gpu", 2, 4)
	shared := vodatest.ProductionArgs(t)
	replicas := map[string]*vodatest.Server{}
	for _, id := range []string{"replica-a", "replica-b"} {
		replicas[id] = vodatest.StartServer(t, c.serverArgs(append([]string{"--identity", id}, shared...)...)...)
	}
	first := holder(t, c.gpuType, "")
	vc := replicas[first].Client()
	a := submit(t, vc, mpiJob.manifest("long-a", c.gpuType, 2, 4, time.Hour))
	b := submit(t, vc, mpiJob.manifest("long-b", c.gpuType, 2, 4, time.Hour))
	c.waitPlaced(t, vc, mpiJob, a, 4)
	jb := c.waitPlaced(t, vc, mpiJob, b, 4)
	uids := objectUIDs(t, c.ns, a, b)
	// Job a reports its progress (the replicas take reports from anyone
	// on loopback), and the leader estimates from it.
	for i := range 3 {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		r := map[string]any{"generation": "g1", "workers": 4, "nodes": 1, "steps": 10 * i, "epoch": 1 + 0.1*float64(i), "totalEpochs": 10}
		if code, _, body := postReport(t, replicas[first], a, "", r); code != 200 {
			t.Fatalf("report %d: %d %s", i, code, body)
		}
	}
	var measured api.Job
	vodatest.WaitFor(t, "the leader's estimate from the reports", 30*time.Second, func() (bool, error) {
		var err error
		measured, err = vc.GetJob(t.Context(), a)
		if err != nil || measured.RemainingSeconds == nil || measured.Measured == nil || len(measured.Measured.Throughput) == 0 {
			return false, fmt.Errorf("%v: remaining %v, measured %+v", err, measured.RemainingSeconds, measured.Measured)
		}
		return true, nil
	})

	replicas[first].Kill()
	start := time.Now()
	second := holder(t, c.gpuType, first)
	t.Logf("%s took over from %s after %v", second, first, time.Since(start).Round(time.Millisecond))
	vc = replicas[second].Client()

	// The new leader adopts the running jobs: same objects, same pods.
	c.waitPlaced(t, vc, mpiJob, a, 4)
	if got := c.waitPlaced(t, vc, mpiJob, b, 4); !equalCounts(got.Placement, jb.Placement) {
		t.Errorf("job %s moved from %v to %v on failover", b, jb.Placement, got.Placement)
	}
	if got := objectUIDs(t, c.ns, a, b); !slices.Equal(got, uids) {
		t.Errorf("objects were recreated on failover: uids %v, then %v", uids, got)
	}
	// It has the old leader's measurements, and estimates the same.
	if got, err := vc.GetJob(t.Context(), a); err != nil || got.Measured == nil || !slices.Equal(got.Measured.Throughput, measured.Measured.Throughput) ||
		got.RemainingSeconds == nil || *got.RemainingSeconds != *measured.RemainingSeconds || !slices.Equal(got.Speedup, measured.Speedup) {
		t.Errorf("job %s after failover: %v, measured %+v, remaining %v, speedup %v; before: measured %+v, remaining %v, speedup %v", a, err,
			got.Measured, got.RemainingSeconds, got.Speedup, measured.Measured, *measured.RemainingSeconds, measured.Speedup)
	}
	// It schedules: a third job makes the others shrink.
	d := submit(t, vc, mpiJob.manifest("after-failover", c.gpuType, 2, 4, time.Hour))
	c.waitPlaced(t, vc, mpiJob, d, 2)
	checkObjects(t, mpiJob, c.ns, []string{a, b, d})

	// The killed replica comes back and stands by.
	replicas[first].Start()
	time.Sleep(2 * time.Second)
	if h := holder(t, c.gpuType, ""); h != second {
		t.Errorf("lease moved to %s after the old leader came back", h)
	}
	checkObjects(t, mpiJob, c.ns, []string{a, b, d})
}

// holder waits until the GPU type's Lease is held by someone other than
// not, and returns who.
func holder(t *testing.T, gpuType, not string) string {
	t.Helper()
	var id string
	vodatest.WaitFor(t, "a leader for "+gpuType, 60*time.Second, func() (bool, error) {
		l, err := env.Client.CoordinationV1().Leases(leaseNamespace).Get(t.Context(), kube.LeaseName(gpuType), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || *l.Spec.HolderIdentity == not {
			return false, fmt.Errorf("holder %v", l.Spec.HolderIdentity)
		}
		id = *l.Spec.HolderIdentity
		return true, nil
	})
	return id
}

func objectUIDs(t *testing.T, ns string, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		o, err := env.Dynamic.Resource(mpiJob.resource).Namespace(ns).Get(t.Context(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(o.GetUID()))
	}
	return out
}

// checkObjects fails unless the namespace holds exactly one object per
// job.
func checkObjects(t *testing.T, k kind, ns string, jobs []string) {
	t.Helper()
	want := slices.Clone(jobs)
	sort.Strings(want)
	if got := objects(t, k, ns); !slices.Equal(got, want) {
		t.Errorf("%s objects %v, want exactly %v", k.name, got, want)
	}
}
