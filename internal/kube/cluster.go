package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
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

// kjob is what a Cluster knows of one tracked job.
type kjob struct {
	name     string
	progress float64
	kind, ns string
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
}

// Cluster is one GPU type's view of the Kubernetes cluster for one
// leadership term. It implements the scheduler core's Port and the
// scheduler service's Cluster. It is safe for concurrent use.
type Cluster struct {
	c       *Client
	gpuType string
	log     *slog.Logger
	queue   workqueue.TypedRateLimitingInterface[string]
	nodeCh  chan struct{}

	mu     sync.Mutex
	jobs   map[string]*kjob
	onDone func(name string, status model.Status)
}

var _ scheduler.Port = (*Cluster)(nil)

func newCluster(c *Client, gpuType string) *Cluster {
	return &Cluster{
		c: c, gpuType: gpuType, log: c.log.With("gpuType", gpuType),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "voda-" + gpuType}),
		nodeCh: make(chan struct{}, 1),
		jobs:   map[string]*kjob{},
	}
}

// Nodes returns the GPU type's nodes that are Ready and have GPUs, sorted
// by name; cordoned ones are marked.
func (cl *Cluster) Nodes() []model.Node {
	var out []model.Node
	for _, obj := range cl.c.nodes.GetStore().List() {
		n := obj.(*corev1.Node)
		if n.Labels[jobspec.LabelAccelerator] != cl.gpuType || !nodeReady(n) {
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
func (cl *Cluster) NodesChanged() <-chan struct{} { return cl.nodeCh }

func (cl *Cluster) nodesChanged() {
	select {
	case cl.nodeCh <- struct{}{}:
	default:
	}
}

// Track makes a job known. The model name and epochs matter only to a
// simulated cluster; progress is reported back as it was given, since a
// real job's progress is its own.
func (cl *Cluster) Track(name, _ string, _ int, progress float64) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, ok := cl.jobs[name]; !ok {
		cl.jobs[name] = &kjob{name: name, progress: progress}
	}
	return nil
}

// Forget drops a job that ended.
func (cl *Cluster) Forget(name string) {
	cl.mu.Lock()
	delete(cl.jobs, name)
	cl.mu.Unlock()
}

// Progress returns the fraction of work the job had done when tracked.
func (cl *Cluster) Progress(name string) float64 {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if j, ok := cl.jobs[name]; ok {
		return j.progress
	}
	return 0
}

// Apply implements scheduler.Port.
func (cl *Cluster) Apply(ctx context.Context, a scheduler.Action) error {
	cl.mu.Lock()
	j, ok := cl.jobs[a.Job]
	if !ok {
		cl.mu.Unlock()
		return fmt.Errorf("kubernetes %s: unknown job %s", cl.gpuType, a.Job)
	}
	kind, ns, uid := j.kind, j.ns, j.uid
	cl.mu.Unlock()
	var err error
	switch a.Kind {
	case scheduler.Halt:
		err = cl.halt(ctx, a.Job, kind, ns, uid)
	case scheduler.Start:
		err = cl.start(ctx, a.Job, a.To)
	case scheduler.Grow, scheduler.Shrink:
		err = cl.resize(ctx, a.Job, kind, ns, a.To)
	case scheduler.Migrate:
		cl.setWant(a.Job, a.To)
	default:
		err = fmt.Errorf("unknown action %v", a.Kind)
	}
	if err != nil {
		return fmt.Errorf("kubernetes %s: %s job %s: %w", cl.gpuType, a.Kind, a.Job, err)
	}
	cl.enqueue(a.Job)
	return nil
}

func (cl *Cluster) setWant(name string, to model.JobPlacement) {
	cl.mu.Lock()
	if j, ok := cl.jobs[name]; ok {
		j.want = to.Clone()
	}
	cl.mu.Unlock()
}

// start creates the job's object with To's worker count, or adopts the
// object a previous term created.
func (cl *Cluster) start(ctx context.Context, name string, to model.JobPlacement) error {
	stored, err := cl.c.opts.Jobs(ctx, name)
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
	if _, ok := cl.c.objects[stored.Kind]; !ok {
		return fmt.Errorf("the cluster does not serve %s; install its operator", gvr.String())
	}
	obj, err := buildObject(stored.Kind, stored.Manifest, cl.c.opts.Namespace, cl.gpuType, to.Workers())
	if err != nil {
		return err
	}
	ns := obj.GetNamespace()
	created, err := cl.c.dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldManager: managedBy})
	if apierrors.IsAlreadyExists(err) {
		created, err = cl.c.dyn.Resource(gvr).Namespace(ns).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err == nil && created.GetLabels()[LabelJob] != name {
			return fmt.Errorf("%s %s/%s exists and is not Voda's", stored.Kind, ns, obj.GetName())
		}
		if err == nil && created.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s %s/%s is still being deleted; retrying next cycle", stored.Kind, ns, obj.GetName())
		}
		if err == nil {
			cl.log.Info("adopting the job's existing object", "job", name, "kind", stored.Kind)
			// An object that already ended is adopted as it is: the
			// reconciler reports its end once, and resizing it would not
			// run it again anyway.
			if jobCondition(created) == "" {
				err = cl.patchWorkers(ctx, stored.Kind, ns, obj.GetName(), to.Workers())
			}
		}
	}
	if err != nil {
		return err
	}
	cl.mu.Lock()
	if j, ok := cl.jobs[name]; ok {
		j.kind, j.ns, j.uid = stored.Kind, ns, created.GetUID()
		j.want, j.halting, j.gone = to.Clone(), false, false
	}
	cl.mu.Unlock()
	return nil
}

// resize sets the Worker replicas; the operator creates or deletes the
// pods and the placement reconciler puts them where To says.
func (cl *Cluster) resize(ctx context.Context, name, kind, ns string, to model.JobPlacement) error {
	if kind == "" {
		return errors.New("job was never started here")
	}
	cl.setWant(name, to)
	return cl.patchWorkers(ctx, kind, ns, name, to.Workers())
}

func (cl *Cluster) patchWorkers(ctx context.Context, kind, ns, name string, workers int) error {
	gvr, err := resourceOf(kind)
	if err != nil {
		return err
	}
	path := workerPath(kind)
	patch := fmt.Sprintf(`{"spec":{%q:{%q:{"replicas":%d}}}}`, path[1], path[2], workers)
	_, err = cl.c.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: managedBy})
	return err
}

// halt deletes the job's object; its pods go with it. An object that
// already ended is kept, so its launcher's logs stay readable; its
// running workers were cleaned up by the operator.
func (cl *Cluster) halt(ctx context.Context, name, kind, ns string, uid types.UID) error {
	cl.mu.Lock()
	if j, ok := cl.jobs[name]; ok {
		j.want, j.halting = nil, true
	}
	cl.mu.Unlock()
	if kind == "" {
		return nil
	}
	if obj := cl.c.object(kind, name); obj != nil && jobCondition(obj) != "" {
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
	err = cl.c.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or a newer object we must not touch
	}
	return err
}

func ptrTo[T any](v T) *T { return &v }

// objectDeleted notes that a job's object went away; if Voda did not
// delete it, the job ends.
func (cl *Cluster) objectDeleted(name string, uid types.UID) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	j, ok := cl.jobs[name]
	if !ok || j.halting || j.want == nil || (j.uid != "" && j.uid != uid) {
		return
	}
	j.gone = true
}

func (cl *Cluster) enqueue(name string) {
	if name != "" {
		cl.queue.Add(name)
	}
}

// Run reconciles jobs until ctx ends, reporting through onDone the jobs
// that ended by themselves: Succeeded (Completed), Failed, or deleted
// behind Voda's back (Canceled).
func (cl *Cluster) Run(ctx context.Context, onDone func(name string, status model.Status)) error {
	defer cl.c.release(cl)
	cl.mu.Lock()
	cl.onDone = onDone
	cl.mu.Unlock()
	go func() {
		<-ctx.Done()
		cl.queue.ShutDown()
	}()
	go cl.resyncEvery(ctx)
	cl.enqueueAll()
	for {
		name, quit := cl.queue.Get()
		if quit {
			return ctx.Err()
		}
		err := cl.reconcile(ctx, name)
		switch {
		case err == nil:
			cl.queue.Forget(name)
		case ctx.Err() != nil:
		default:
			cl.log.Warn("reconcile job; retrying", "job", name, "err", err)
			cl.queue.AddRateLimited(name)
		}
		cl.queue.Done(name)
	}
}

func (cl *Cluster) enqueueAll() {
	cl.mu.Lock()
	names := make([]string, 0, len(cl.jobs))
	for n := range cl.jobs {
		names = append(names, n)
	}
	cl.mu.Unlock()
	for _, n := range names {
		cl.enqueue(n)
	}
}

func (cl *Cluster) resyncEvery(ctx context.Context) {
	t := time.NewTicker(cl.c.opts.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cl.enqueueAll()
			cl.nodesChanged()
		}
	}
}

// reconcile reports a job's end, or makes its worker pods match the
// placement the scheduler decided.
func (cl *Cluster) reconcile(ctx context.Context, name string) error {
	cl.mu.Lock()
	j, ok := cl.jobs[name]
	if !ok || j.kind == "" {
		cl.mu.Unlock()
		cl.log.Debug("reconcile: job not started here", "job", name, "tracked", ok)
		return nil
	}
	k := *j
	onDone := cl.onDone
	cl.mu.Unlock()
	obj := cl.c.object(k.kind, name)
	if obj != nil && k.uid != "" && obj.GetUID() != k.uid {
		obj = nil // a stale or foreign object
	}
	var status model.Status
	switch {
	case obj != nil && jobCondition(obj) == "Succeeded":
		status = model.StatusCompleted
	case obj != nil && jobCondition(obj) == "Failed":
		status = model.StatusFailed
	case k.gone:
		status = model.StatusCanceled
	}
	if status != "" {
		if k.reported || onDone == nil {
			return nil
		}
		cl.mu.Lock()
		if j, ok := cl.jobs[name]; ok {
			j.reported = true
		}
		cl.mu.Unlock()
		if status == model.StatusCanceled {
			cl.log.Warn("job object deleted outside Voda; freeing its GPUs", "job", name, "kind", k.kind)
		} else {
			cl.log.Info("job ended", "job", name, "status", string(status))
		}
		// Never block the reconciler on the scheduler loop.
		go onDone(name, status)
		return nil
	}
	if k.want == nil || k.halting {
		return nil
	}
	if err := cl.placePods(ctx, name, k.want); err != nil {
		return err
	}
	if k.kind == jobspec.KindMPIJob {
		return cl.nudgeLauncher(ctx, name, k)
	}
	return nil
}
