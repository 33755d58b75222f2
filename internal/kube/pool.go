package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/scheduler"
)

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// trackedJob is what a Pool knows of one tracked job.
type trackedJob struct {
	name      string
	progress  float64
	kind      jobspec.Kind
	namespace string
	// want is the placement the scheduler decided; nil when the job is
	// not running.
	want model.JobPlacement
	// uid is the object Voda created or adopted ("" before that).
	uid types.UID
	// halting: Voda deleted the object itself.
	halting bool
	// gone: the object was deleted behind Voda's back while running.
	gone bool
	// reported: the job's end went to the scheduler.
	reported bool
	// hosts is the running workers the launcher was last told of (MPIJob).
	hosts string
	// log is set when the job's progress is read from its log.
	log *logReading
}

// Pool is one GPU type's view of the Kubernetes cluster for one
// leadership term. It implements the scheduler core's Port and the
// scheduler service's Backend. It is safe for concurrent use.
type Pool struct {
	client  *Client
	gpuType string
	log     *slog.Logger
	queue   workqueue.TypedRateLimitingInterface[string]
	nodeCh  chan struct{}

	mu     sync.Mutex
	jobs   map[string]*trackedJob
	onDone func(name string, status model.Status)
}

var _ scheduler.Port = (*Pool)(nil)

func newPool(client *Client, gpuType string) *Pool {
	return &Pool{
		client: client, gpuType: gpuType, log: client.log.With("gpuType", gpuType),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "voda-" + gpuType}),
		nodeCh: make(chan struct{}, 1),
		jobs:   map[string]*trackedJob{},
	}
}

// Nodes returns the GPU type's nodes that are Ready and have GPUs, sorted
// by name; cordoned ones are marked.
func (pool *Pool) Nodes() []model.Node { return pool.nodes(true) }

// NotReadyNodes returns the GPU type's nodes with GPUs that Nodes leaves
// out because they are not Ready (or are being deleted), sorted by name.
func (pool *Pool) NotReadyNodes() []model.Node { return pool.nodes(false) }

// nodes returns the GPU type's nodes with GPUs whose readiness is ready.
func (pool *Pool) nodes(ready bool) []model.Node {
	var out []model.Node
	for _, obj := range pool.client.nodes.GetStore().List() {
		n := obj.(*corev1.Node)
		if n.Labels[jobspec.LabelAccelerator] != pool.gpuType || nodeReady(n) != ready {
			continue
		}
		gpus := n.Status.Allocatable[corev1.ResourceName(ResourceGPU)]
		if gpus.Value() <= 0 {
			continue
		}
		out = append(out, model.Node{Name: n.Name, GPUs: int(gpus.Value()), Cordoned: n.Spec.Unschedulable})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func nodeReady(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodesChanged signals (coalesced) that Nodes may answer differently.
func (pool *Pool) NodesChanged() <-chan struct{} { return pool.nodeCh }

func (pool *Pool) nodesChanged() {
	select {
	case pool.nodeCh <- struct{}{}:
	default:
	}
}

// Track makes a job known. The model name and epochs matter only to a
// simulated cluster; progress is reported back as it was given, since a
// real job's progress is its own.
func (pool *Pool) Track(name, _ string, _, _ int, progress float64) error {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if _, ok := pool.jobs[name]; !ok {
		pool.jobs[name] = &trackedJob{name: name, progress: progress}
	}
	return nil
}

// Forget drops a job that ended.
func (pool *Pool) Forget(name string) {
	pool.mu.Lock()
	delete(pool.jobs, name)
	pool.mu.Unlock()
}

// Progress returns the fraction of work the job had done when tracked.
func (pool *Pool) Progress(name string) float64 {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if j, ok := pool.jobs[name]; ok {
		return j.progress
	}
	return 0
}

// Apply implements scheduler.Port.
func (pool *Pool) Apply(ctx context.Context, a scheduler.Action) error {
	pool.mu.Lock()
	j, ok := pool.jobs[a.Job]
	if !ok {
		pool.mu.Unlock()
		return fmt.Errorf("kubernetes %s: unknown job %s", pool.gpuType, a.Job)
	}
	kind, ns, uid := j.kind, j.namespace, j.uid
	pool.mu.Unlock()
	var err error
	switch a.Kind {
	case scheduler.Halt:
		err = pool.halt(ctx, a.Job, kind, ns, uid)
	case scheduler.Start:
		err = pool.start(ctx, a.Job, a.To)
	case scheduler.Grow, scheduler.Shrink:
		err = pool.resize(ctx, a.Job, kind, ns, a.To)
	case scheduler.Migrate:
		pool.setWant(a.Job, a.To)
	default:
		err = fmt.Errorf("unknown action %v", a.Kind)
	}
	if err != nil {
		return fmt.Errorf("kubernetes %s: %s job %s: %w", pool.gpuType, a.Kind, a.Job, err)
	}
	pool.enqueue(a.Job)
	return nil
}

func (pool *Pool) setWant(name string, to model.JobPlacement) {
	pool.mu.Lock()
	if j, ok := pool.jobs[name]; ok {
		j.want = to.Clone()
		if j.log != nil {
			j.log.placements++
		}
	}
	pool.mu.Unlock()
}

// start creates the job's object with To's worker count, or adopts the
// object a previous term created.
func (pool *Pool) start(ctx context.Context, name string, to model.JobPlacement) error {
	stored, err := pool.client.opts.Jobs(ctx, name)
	if err != nil {
		return fmt.Errorf("load manifest: %w", err)
	}
	if st := stored.Status; st.Done() {
		// A terminal status is final: whatever asked for a start worked
		// from an older copy of the job, and creating the object again
		// would run a finished job a second time.
		return fmt.Errorf("job already ended (%s): not creating its object again", st)
	}
	gvr, err := resourceOf(stored.Kind)
	if err != nil {
		return err
	}
	if _, ok := pool.client.objects[stored.Kind]; !ok {
		return fmt.Errorf("the cluster does not serve %s; install its operator", gvr.String())
	}
	obj, err := buildObject(stored.Kind, stored.Manifest, pool.client.opts.Namespace, pool.gpuType, to.Workers())
	if err != nil {
		return err
	}
	pool.client.opts.Progress.inject(obj.Object, stored.Kind, obj.GetName())
	ns := obj.GetNamespace()
	if !slices.Contains(pool.client.opts.JobNamespaces, ns) {
		return fmt.Errorf("namespace %s is not one of Voda's job namespaces (%s)", ns, strings.Join(pool.client.opts.JobNamespaces, ", "))
	}
	created, err := pool.client.dynamic.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldManager: managedBy})
	if apierrors.IsAlreadyExists(err) {
		created, err = pool.client.dynamic.Resource(gvr).Namespace(ns).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err == nil && created.GetLabels()[LabelJob] != name {
			return fmt.Errorf("%s %s/%s exists and is not Voda's", stored.Kind, ns, obj.GetName())
		}
		if err == nil && created.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s %s/%s is still being deleted; retrying next cycle", stored.Kind, ns, obj.GetName())
		}
		if err == nil {
			pool.log.Info("adopting the job's existing object", "job", name, "kind", stored.Kind)
			// An object that already ended is adopted as it is: the
			// reconciler reports its end once, and resizing it would not
			// run it again anyway.
			if jobCondition(created) == "" {
				err = pool.patchWorkers(ctx, stored.Kind, ns, obj.GetName(), to.Workers())
			}
		}
	}
	if err != nil {
		return err
	}
	pool.mu.Lock()
	if j, ok := pool.jobs[name]; ok {
		j.kind, j.namespace, j.uid = stored.Kind, ns, created.GetUID()
		j.want, j.halting, j.gone = to.Clone(), false, false
		pool.setLogPattern(j, name, stored.ProgressLog)
	}
	pool.mu.Unlock()
	return nil
}

// resize sets the Worker replicas; the operator creates or deletes the
// pods and the placement reconciler puts them where To says.
func (pool *Pool) resize(ctx context.Context, name string, kind jobspec.Kind, ns string, to model.JobPlacement) error {
	if kind == "" {
		return errors.New("job was never started here")
	}
	pool.setWant(name, to)
	return pool.patchWorkers(ctx, kind, ns, name, to.Workers())
}

func (pool *Pool) patchWorkers(ctx context.Context, kind jobspec.Kind, ns, name string, workers int) error {
	gvr, err := resourceOf(kind)
	if err != nil {
		return err
	}
	path := workerPath(kind)
	patch := fmt.Sprintf(`{"spec":{%q:{%q:{"replicas":%d}}}}`, path[1], path[2], workers)
	_, err = pool.client.dynamic.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: managedBy})
	return err
}

// halt deletes the job's object; its pods go with it. An object that
// already ended is kept, so its launcher's logs stay readable; its
// running workers were cleaned up by the operator.
func (pool *Pool) halt(ctx context.Context, name string, kind jobspec.Kind, ns string, uid types.UID) error {
	pool.mu.Lock()
	if j, ok := pool.jobs[name]; ok {
		j.want, j.halting = nil, true
	}
	pool.mu.Unlock()
	if kind == "" {
		return nil
	}
	if obj := pool.client.object(kind, name); obj != nil && jobCondition(obj) != "" {
		return nil
	}
	gvr, err := resourceOf(kind)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err = pool.client.dynamic.Resource(gvr).Namespace(ns).Delete(ctx, name, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or a newer object we must not touch
	}
	return err
}

func ptrTo[T any](v T) *T { return &v }

// objectDeleted notes that a job's object went away; if Voda did not
// delete it, the job ends.
func (pool *Pool) objectDeleted(name string, uid types.UID) {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	j, ok := pool.jobs[name]
	if !ok || j.halting || j.want == nil || (j.uid != "" && j.uid != uid) {
		return
	}
	j.gone = true
}

func (pool *Pool) enqueue(name string) {
	if name != "" {
		pool.queue.Add(name)
	}
}

// Run reconciles jobs until ctx ends, reporting through onDone the jobs
// that ended by themselves: Succeeded (Completed), Failed, or deleted
// behind Voda's back (Canceled).
func (pool *Pool) Run(ctx context.Context, onDone func(name string, status model.Status)) error {
	defer pool.client.release(pool)
	pool.mu.Lock()
	pool.onDone = onDone
	pool.mu.Unlock()
	go func() {
		<-ctx.Done()
		pool.queue.ShutDown()
	}()
	go every(ctx, resyncPeriod, func() {
		pool.enqueueAll()
		pool.nodesChanged()
	})
	if sink := pool.client.opts.LogProgress; sink != nil {
		interval := pool.client.opts.LogInterval
		if interval <= 0 {
			interval = DefaultLogInterval
		}
		go every(ctx, interval, func() { pool.readLogs(ctx, sink) })
	}
	pool.enqueueAll()
	for {
		name, quit := pool.queue.Get()
		if quit {
			return ctx.Err()
		}
		err := pool.reconcile(ctx, name)
		switch {
		case err == nil:
			pool.queue.Forget(name)
		case ctx.Err() != nil:
		default:
			pool.log.Warn("reconcile job; retrying", "job", name, "err", err)
			pool.queue.AddRateLimited(name)
		}
		pool.queue.Done(name)
	}
}

func (pool *Pool) enqueueAll() {
	pool.mu.Lock()
	names := make([]string, 0, len(pool.jobs))
	for n := range pool.jobs {
		names = append(names, n)
	}
	pool.mu.Unlock()
	for _, n := range names {
		pool.enqueue(n)
	}
}

// every calls f every period until ctx ends.
func every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// reconcile reports a job's end, or makes its worker pods match the
// placement the scheduler decided.
func (pool *Pool) reconcile(ctx context.Context, name string) error {
	pool.mu.Lock()
	j, ok := pool.jobs[name]
	if !ok || j.kind == "" {
		pool.mu.Unlock()
		pool.log.Debug("reconcile: job not started here", "job", name, "tracked", ok)
		return nil
	}
	tracked := *j
	onDone := pool.onDone
	pool.mu.Unlock()
	obj := pool.client.object(tracked.kind, name)
	if obj != nil && tracked.uid != "" && obj.GetUID() != tracked.uid {
		obj = nil // a stale or foreign object
	}
	var status model.Status
	switch {
	case obj != nil && jobCondition(obj) == "Succeeded":
		status = model.StatusCompleted
	case obj != nil && jobCondition(obj) == "Failed":
		status = model.StatusFailed
	case tracked.gone:
		status = model.StatusCanceled
	}
	if status != "" {
		if tracked.reported || onDone == nil {
			return nil
		}
		pool.mu.Lock()
		if j, ok := pool.jobs[name]; ok {
			j.reported = true
		}
		pool.mu.Unlock()
		if status == model.StatusCanceled {
			pool.log.Warn("job object deleted outside Voda; freeing its GPUs", "job", name, "kind", tracked.kind)
		} else {
			pool.log.Info("job ended", "job", name, "status", string(status))
		}
		// Never block the reconciler on the scheduler loop.
		go onDone(name, status)
		return nil
	}
	if tracked.want == nil || tracked.halting {
		return nil
	}
	if err := pool.placePods(ctx, name, tracked.want); err != nil {
		return err
	}
	if tracked.kind == jobspec.KindMPIJob {
		return pool.nudgeLauncher(ctx, name, tracked)
	}
	return nil
}
