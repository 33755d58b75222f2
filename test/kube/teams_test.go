package kube

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/test/vodatest"
)

// Two teams, team A and team B, guaranteed 8 GPUs each of 16 on two
// 8-GPU kwok nodes, with the real mpi-operator and a 10-minute rate limit.
// Team A's elastic MPIJob borrows all 16; team B submits a job of 8; in
// the next cycle, not after the rate limit, team A's job shrinks to 8
// (the operator deletes its pods) and team B's starts on the 8 freed.
// With team B limited to 8, its job of up to 16 workers never has more
// than 8 pods, even when team A's job has ended and GPUs are idle.
func TestTeamsReclaimWithinOneCycle(t *testing.T) {
	ctx := t.Context()
	const gpuType = "teams-gpu"
	a := newCluster(t, gpuType, 2, 8)
	teamA, teamB := a.ns, a.ns+"-b"
	if err := env.CreateNamespace(ctx, teamB); err != nil {
		t.Fatal(err)
	}
	bindJobRole(t, teamB)
	b := *a
	b.ns = teamB
	srv := a.start("--job-namespaces", teamA+","+teamB, "--rate-limit", "10m")
	vc := srv.Client()
	putQuota(t, vc, gpuType, teamA, api.QuotaRequest{Guarantee: 8})
	putQuota(t, vc, gpuType, teamB, api.QuotaRequest{Guarantee: 8, Limit: 8})

	// Team B's pods never exceed its limit: watched from the start.
	watch, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	most := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for watch.Err() == nil {
			pods, err := workerPodsOfNamespace(watch, teamB)
			if err == nil {
				mu.Lock()
				most = max(most, pods)
				mu.Unlock()
			}
			select {
			case <-watch.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	defer func() {
		stop()
		wg.Wait()
	}()

	// The operator's pace is not Voda's: after TestScale's 200 jobs
	// (scale_test.go sorts before this file) mpi-operator v0.6.0 lags for
	// minutes, so pods get a generous deadline, Voda's decisions a short
	// one (the rate limit is ten minutes).
	placed := func(c *cluster, job string, workers int) {
		t.Helper()
		vodatest.WaitFor(t, fmt.Sprintf("%s running on %d placed workers", job, workers), 5*time.Minute, func() (bool, error) {
			_, ok, err := c.placed(ctx, vc, mpiJob, job, workers)
			return ok, err
		})
	}
	borrower := submit(t, vc, withNamespace(t, mpiJob.manifest("borrower", gpuType, 1, 16, time.Hour), teamA))
	placed(a, borrower, 16)

	start := time.Now()
	owed := submit(t, vc, withNamespace(t, mpiJob.manifest("owed", gpuType, 8, 16, time.Hour), teamB))
	vodatest.WaitFor(t, "Voda's decision: team B's job on 8 workers, team A's on 8", 90*time.Second, func() (bool, error) {
		o, err := vc.GetJob(ctx, owed)
		if err != nil {
			return false, err
		}
		br, err := vc.GetJob(ctx, borrower)
		if err != nil {
			return false, err
		}
		return o.Status == "Running" && o.Workers == 8 && br.Workers == 8,
			fmt.Errorf("team B's job %s with %d workers, team A's with %d", o.Status, o.Workers, br.Workers)
	})
	decided := time.Since(start)
	placed(&b, owed, 8)
	placed(a, borrower, 8)
	t.Logf("team B's job decided on 8 workers and team A's shrunk to 8 in %v, their pods so in %v (rate limit 10m)", decided, time.Since(start))
	if sched, err := vc.GetScheduler(ctx, gpuType); err == nil && sched.Cycles > 0 {
		for _, tm := range sched.Teams {
			t.Logf("team %s: guarantee %d, limit %d, in use %d, entitled %d, demand %d", tm.Team, tm.Guarantee, tm.Limit, tm.GPUsInUse, tm.Entitled, tm.Demand)
		}
	}

	// Team A's job ends; with the rate limit back to 1 s, team B's job
	// could grow to 16, but its limit holds it at 8.
	if _, err := vc.SetRateLimit(ctx, gpuType, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := vc.DeleteJob(ctx, borrower); err != nil {
		t.Fatal(err)
	}
	// Two cycles after team A's job has gone: the second ran after the
	// rate limit of the first, so it could have grown team B's job.
	var after int64
	vodatest.WaitFor(t, "team A's job gone", 90*time.Second, func() (bool, error) {
		s, err := vc.GetScheduler(ctx, gpuType)
		if err != nil {
			return false, err
		}
		for _, tm := range s.Teams {
			if tm.Team == teamA && tm.Running+tm.Waiting > 0 {
				return false, fmt.Errorf("team A still has %d live jobs", tm.Running+tm.Waiting)
			}
		}
		after = s.Cycles
		return true, nil
	})
	inUse := 0
	vodatest.WaitFor(t, "two more cycles", 90*time.Second, func() (bool, error) {
		s, err := vc.GetScheduler(ctx, gpuType)
		if err != nil {
			return false, err
		}
		inUse = max(inUse, s.GPUsInUse)
		return s.Cycles >= after+2, fmt.Errorf("%d cycles, want %d", s.Cycles, after+2)
	})
	if inUse != 8 {
		t.Errorf("up to %d GPUs in use after team A's job ended; team B's limit is 8", inUse)
	}
	placed(&b, owed, 8)
	stop()
	wg.Wait()
	if most > 8 {
		t.Errorf("team B had %d worker pods at once; its limit is 8", most)
	}
}

// putQuota sets a team's quota through the API.
func putQuota(t *testing.T, vc *client.Client, gpuType, team string, q api.QuotaRequest) {
	t.Helper()
	got, err := vc.SetQuota(t.Context(), gpuType, team, q)
	if err != nil {
		t.Fatalf("set team %s's quota %+v: %v", team, q, err)
	}
	if got.Team != team || !got.Quota || got.Guarantee != q.Guarantee || got.Limit != q.Limit {
		t.Fatalf("set team %s's quota %+v: answered %+v", team, q, got)
	}
}

// workerPodsOfNamespace counts the worker pods in ns that are not
// terminating.
func workerPodsOfNamespace(ctx context.Context, ns string) (int, error) {
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelJob})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}
