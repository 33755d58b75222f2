package kube

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/test/vodatest"
)

// TestScale submits a burst of jobs to 64 kwok nodes of 8 GPUs and
// waits until every one has run to completion with no pod left gated or
// pending. It reports, over all jobs, the time from submission to the
// first worker bound, and from the scheduling decision that started the
// job (its first start) to all its first workers bound.
//
// VODA_SCALE_JOBS overrides the number of jobs (default 500).
func TestScale(t *testing.T) {
	jobs := 500
	if v := os.Getenv("VODA_SCALE_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("VODA_SCALE_JOBS=%q: want a positive number", v)
		}
		jobs = n
	}
	c := newCluster(t, "scale-gpu", 64, 8)
	srv := c.start("--tick", "30s", "--log-level", "info")
	vc := srv.Client()
	ctx := t.Context()

	// Watch worker pods: when each was first seen bound.
	var mu sync.Mutex
	bound := map[string]map[string]time.Time{} // job -> pod -> first seen bound
	record := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		job := p.Labels[kube.LabelJob]
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if bound[job] == nil {
			bound[job] = map[string]time.Time{}
		}
		if _, seen := bound[job][p.Name]; !seen {
			bound[job][p.Name] = now
		}
	}
	f := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(c.ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = kube.LabelJob }))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, o any) { record(o) },
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	// The burst: 16 clients submit concurrently. Each job runs on 1 to
	// 2 workers and its launcher completes 30 to 90 s after it starts.
	rng := rand.New(rand.NewPCG(5, 0))
	manifests := make([][]byte, jobs)
	for i := range manifests {
		done := time.Duration(30+rng.IntN(61)) * time.Second
		manifests[i] = mpiJob.manifest(fmt.Sprintf("burst-%03d", i), c.gpuType, 1, 2, done)
	}
	submitted := make([]time.Time, jobs)
	names := make([]string, jobs)
	burst := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	next := make(chan int, jobs)
	for i := range jobs {
		next <- i
	}
	close(next)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j, err := vc.CreateJob(ctx, manifests[i])
				if err != nil {
					errs <- err
					continue
				}
				names[i], submitted[i] = j.Name, time.Now()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("submit: %v", err)
	}
	t.Logf("%d jobs submitted in %v", jobs, time.Since(burst).Round(time.Millisecond))

	vodatest.WaitFor(t, "every job completed", 20*time.Minute, func() (bool, error) {
		list, err := vc.ListJobs(ctx, client.ListOptions{GPUType: c.gpuType})
		if err != nil {
			return false, err
		}
		counts := map[string]int{}
		for _, j := range list {
			counts[j.Status]++
		}
		return counts["Completed"] == jobs, fmt.Errorf("jobs by status: %v", counts)
	})
	t.Logf("all %d jobs completed %v after the burst began", jobs, time.Since(burst).Round(time.Second))
	vodatest.WaitFor(t, "no pod left gated or pending", time.Minute, func() (bool, error) {
		return noStrandedPods(ctx, c.ns)
	})

	var toBound, decisionToBound []time.Duration
	for i, name := range names {
		j, err := vc.GetJob(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		pods := bound[name]
		mu.Unlock()
		if len(pods) == 0 || j.FirstStart == nil {
			t.Errorf("job %s: no worker pod was seen bound (first start %v)", name, j.FirstStart)
			continue
		}
		var first time.Time
		for _, at := range pods {
			if first.IsZero() || at.Before(first) {
				first = at
			}
		}
		toBound = append(toBound, first.Sub(submitted[i]))
		decisionToBound = append(decisionToBound, first.Sub(*j.FirstStart))
	}
	p := func(d []time.Duration, q float64) time.Duration {
		sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
		return d[min(len(d)-1, int(q*float64(len(d))))].Round(time.Millisecond)
	}
	if len(toBound) > 0 {
		t.Logf("submit to first worker bound: p50 %v, p99 %v, max %v", p(toBound, 0.5), p(toBound, 0.99), p(toBound, 1))
		t.Logf("scheduling decision to first worker bound: p50 %v, p99 %v, max %v",
			p(decisionToBound, 0.5), p(decisionToBound, 0.99), p(decisionToBound, 1))
	}
}
