package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	putQuota(t, vc, gpuType, teamA, `{"guarantee": 8}`)
	putQuota(t, vc, gpuType, teamB, `{"guarantee": 8, "limit": 8}`)

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

	borrower := submit(t, vc, withNamespace(t, mpiJob.manifest("borrower", gpuType, 1, 16, time.Hour), teamA))
	a.waitPlaced(t, vc, mpiJob, borrower, 16)

	start := time.Now()
	owed := submit(t, vc, withNamespace(t, mpiJob.manifest("owed", gpuType, 8, 16, time.Hour), teamB))
	b.waitPlaced(t, vc, mpiJob, owed, 8)
	a.waitPlaced(t, vc, mpiJob, borrower, 8)
	took := time.Since(start)
	t.Logf("team B's job placed on 8 workers and team A's shrunk to 8 in %v (rate limit 10m)", took)
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
	vodatest.WaitFor(t, "team B's job decided again after team A's ended, at its limit", 90*time.Second, func() (bool, error) {
		s, err := vc.GetScheduler(ctx, gpuType)
		if err != nil {
			return false, err
		}
		for _, tm := range s.Teams {
			if tm.Team == teamA {
				return false, fmt.Errorf("team A still has live jobs")
			}
		}
		return s.GPUsInUse == 8, fmt.Errorf("%d GPUs in use", s.GPUsInUse)
	})
	b.waitPlaced(t, vc, mpiJob, owed, 8)
	stop()
	wg.Wait()
	if most > 8 {
		t.Errorf("team B had %d worker pods at once; its limit is 8", most)
	}
}

// putQuota sets a team's quota through the API.
func putQuota(t *testing.T, vc *client.Client, gpuType, team, body string) {
	t.Helper()
	url := fmt.Sprintf("%s/api/v1/schedulers/%s/teams/%s", vc.BaseURL(), gpuType, team)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got api.Team
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s %s: %s, %v", url, body, resp.Status, err)
	}
	if got.Team != team || !got.Quota {
		t.Fatalf("PUT %s %s: answered %+v", url, body, got)
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
