package kube

import (
	"context"
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
	"k8s.io/client-go/dynamic/dynamicinformer"
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
// VODA_SCALE_JOBS sets the number of jobs: 200 by default, to keep the
// suite's time in bounds; the figures in docs/kubernetes.md are for 500
// (VODA_SCALE_JOBS=500 make kube-test).
func TestScale(t *testing.T) {
	jobs := 200
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
	ctx, cancel := context.WithCancel(t.Context())

	// Watch worker pods: when each was first seen bound.
	// Watch worker pods and job objects: when each was first seen, and
	// when each pod was first seen bound.
	var mu sync.Mutex
	created := map[string]time.Time{}              // pod UID -> first seen
	bound := map[string]map[string]time.Duration{} // job -> pod UID -> bound, since first seen
	boundAt := map[string]time.Time{}              // job -> its first worker's bind
	objectAt := map[string]time.Time{}             // job -> its object first seen
	record := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		job, uid := p.Labels[kube.LabelJob], string(p.UID)
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, seen := created[uid]; !seen {
			created[uid] = now
		}
		if p.Spec.NodeName == "" {
			return
		}
		if bound[job] == nil {
			bound[job] = map[string]time.Duration{}
		}
		if _, seen := bound[job][uid]; !seen {
			bound[job][uid] = now.Sub(created[uid])
		}
		if _, seen := boundAt[job]; !seen {
			boundAt[job] = now
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
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(env.Dynamic, 0, c.ns, nil)
	objInf := df.ForResource(mpiJob.resource).Informer()
	if _, err := objInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if o, ok := obj.(metav1.Object); ok {
			mu.Lock()
			objectAt[o.GetName()] = time.Now()
			mu.Unlock()
		}
	}}); err != nil {
		t.Fatal(err)
	}
	df.Start(ctx.Done())
	defer df.Shutdown()
	f.Start(ctx.Done())
	defer f.Shutdown()
	defer cancel() // before Shutdown, which waits for the informer to stop
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, objInf.HasSynced)

	// The burst: 16 clients submit concurrently. Each job runs on 1 to
	// 2 workers and its launcher completes 20 to 60 s after it starts.
	rng := rand.New(rand.NewPCG(5, 0))
	manifests := make([][]byte, jobs)
	for i := range manifests {
		done := time.Duration(20+rng.IntN(41)) * time.Second
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
			counts[string(j.Status)]++
		}
		return counts["Completed"] == jobs, fmt.Errorf("jobs by status: %v", counts)
	})
	t.Logf("all %d jobs completed %v after the burst began", jobs, time.Since(burst).Round(time.Second))
	vodatest.WaitFor(t, "no pod left gated or pending", time.Minute, func() (bool, error) {
		return noStrandedPods(ctx, c.ns)
	})

	// Spans, per job: submit -> first worker bound (end to end); the
	// scheduling decision that started it (its first start) -> its object
	// created (Voda's actuation); decision -> first worker bound; and, per
	// worker pod, the operator creating it -> bound (Voda's placement of a
	// gated pod plus kube-scheduler's bind).
	var toBound, toObject, decisionToBound, podToBound []time.Duration
	for i, name := range names {
		j, err := vc.GetJob(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		first, ok := boundAt[name]
		obj, objOK := objectAt[name]
		for _, d := range bound[name] {
			podToBound = append(podToBound, d)
		}
		mu.Unlock()
		if !ok || !objOK || j.FirstStart == nil {
			t.Errorf("job %s: bound %v, object seen %v, first start %v", name, ok, objOK, j.FirstStart)
			continue
		}
		toBound = append(toBound, first.Sub(submitted[i]))
		toObject = append(toObject, obj.Sub(*j.FirstStart))
		decisionToBound = append(decisionToBound, first.Sub(*j.FirstStart))
	}
	for _, s := range []struct {
		what string
		d    []time.Duration
	}{
		{"submit to first worker bound", toBound},
		{"scheduling decision to job object created", toObject},
		{"scheduling decision to first worker bound", decisionToBound},
		{"worker pod created by the operator to bound", podToBound},
	} {
		if len(s.d) > 0 {
			t.Logf("%s (%d): p50 %v, p99 %v, max %v", s.what, len(s.d), pct(s.d, 0.5), pct(s.d, 0.99), pct(s.d, 1))
		}
	}
}

// pct returns the q-quantile of d (sorting it), rounded to milliseconds.
func pct(d []time.Duration, q float64) time.Duration {
	sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
	return d[min(len(d)-1, int(q*float64(len(d))))].Round(time.Millisecond)
}
