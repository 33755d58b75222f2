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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/model"
)

// DefaultNamespace is where jobs whose manifest names no namespace run.
const DefaultNamespace = "default"

// resyncPeriod is how often every tracked job is reconciled even when no
// event arrived.
const resyncPeriod = 30 * time.Second

// Job is what a Client reads of a stored job to start it.
type Job struct {
	// Kind is the manifest's kind: jobspec.KindMPIJob or KindPyTorchJob.
	Kind jobspec.Kind
	// Manifest is the submitted manifest as JSON, with the job's name.
	Manifest []byte
	// Status is the stored status; a terminal one refuses the start.
	Status model.Status
	// ProgressLog is the job's vodascheduler/progress-log pattern, if any.
	ProgressLog string
}

// JobSource reads the stored job Voda starts. Its error is wrapped into
// the start's, so callers can still test it with errors.Is.
type JobSource func(ctx context.Context, name string) (Job, error)

// Options configure a Client.
type Options struct {
	Config *rest.Config
	// Namespace receives jobs whose manifest names none
	// (DefaultNamespace if empty).
	Namespace string
	// JobNamespaces are the namespaces where Voda runs jobs: it watches
	// and changes pods and job objects there only, so its permissions can
	// be namespaced (deploy/rbac.yaml). Empty means Namespace alone. A
	// job whose manifest names another namespace is refused at its start.
	JobNamespaces []string
	Jobs          JobSource
	// Progress is where jobs' pods report progress; the zero value gives
	// them nothing to report with.
	Progress Progress
	// LogProgress takes the progress read from the logs of jobs that name
	// a vodascheduler/progress-log pattern (the server gives it to the
	// same ingestion as the jobs' own reports); nil reads no logs.
	LogProgress func(ctx context.Context, job string, r LogReport) error
	// LogInterval is how often each such job's log is read
	// (DefaultLogInterval if zero).
	LogInterval time.Duration
	Logger      *slog.Logger
}

// Client watches the cluster for every GPU type. Create it with
// NewClient, call Start once, then take a Pool per GPU type.
type Client struct {
	opts      Options
	log       *slog.Logger
	clientset kubernetes.Interface
	dynamic   dynamic.Interface

	nodeFactory informers.SharedInformerFactory
	// Pods and job objects are watched per job namespace, so that
	// Voda needs no cluster-wide permission on them.
	podFactories    []informers.SharedInformerFactory
	objectFactories []dynamicinformer.DynamicSharedInformerFactory
	nodes           cache.SharedIndexInformer
	pods            informerSet
	objects         map[jobspec.Kind]informerSet // job kind -> its informers

	mu    sync.Mutex
	pools map[string]*Pool // GPU type -> the pool of the current term
}

// indexJob indexes pods and job objects by Voda job name.
const indexJob = "vodaJob"

func byJob(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if j := m.GetLabels()[LabelJob]; j != "" {
		return []string{j}, nil
	}
	return nil, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("object %T has no metadata", obj)
	}
	return m, nil
}

// NewClient connects to the cluster described by opts.Config.
func NewClient(opts Options) (*Client, error) {
	if opts.Config == nil {
		return nil, errors.New("kubernetes: no client configuration")
	}
	if opts.Jobs == nil {
		return nil, errors.New("kubernetes: no job source")
	}
	cfg := rest.CopyConfig(opts.Config)
	if cfg.QPS == 0 {
		// A 500-job burst means thousands of pod updates; client-go's
		// default of 5 per second would make placement take minutes.
		cfg.QPS, cfg.Burst = 200, 400
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "voda-scheduler"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return newClient(opts, cs, dyn), nil
}

// newClient is NewClient over clients already made; the unit tests give
// it client-go's fakes.
func newClient(opts Options, cs kubernetes.Interface, dyn dynamic.Interface) *Client {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if len(opts.JobNamespaces) == 0 {
		opts.JobNamespaces = []string{opts.Namespace}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{opts: opts, log: log, clientset: cs, dynamic: dyn, objects: map[jobspec.Kind]informerSet{}, pools: map[string]*Pool{}}
	managed := func(o *metav1.ListOptions) { o.LabelSelector = LabelJob }
	c.nodeFactory = informers.NewSharedInformerFactory(cs, 0)
	for _, ns := range opts.JobNamespaces {
		c.podFactories = append(c.podFactories, informers.NewSharedInformerFactoryWithOptions(cs, 0,
			informers.WithNamespace(ns), informers.WithTweakListOptions(managed)))
		c.objectFactories = append(c.objectFactories, dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, managed))
	}
	return c
}

// Clientset returns the typed client (for leader election).
func (c *Client) Clientset() kubernetes.Interface { return c.clientset }

// SyncTimeout bounds how long Start waits for the informers' caches.
const SyncTimeout = time.Minute

// Start starts the informers, which run until ctx ends, and waits (at
// most SyncTimeout) until their caches are filled. A
// job kind whose resource the cluster does not serve (its operator is
// not installed) is left out with a warning; starting such a job fails.
func (c *Client) Start(ctx context.Context) error {
	c.nodes = c.nodeFactory.Core().V1().Nodes().Informer()
	for _, f := range c.podFactories {
		c.pods = append(c.pods, f.Core().V1().Pods().Informer())
	}
	if err := c.pods.addIndexers(cache.Indexers{indexJob: byJob}); err != nil {
		return fmt.Errorf("kubernetes: index pods: %w", err)
	}
	if _, err := c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeEvent(nil, obj) },
		UpdateFunc: c.nodeEvent,
		DeleteFunc: func(obj any) { c.nodeEvent(obj, nil) },
	}); err != nil {
		return err
	}
	if err := c.pods.addEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podEvent,
		UpdateFunc: func(_, obj any) { c.podEvent(obj) },
		DeleteFunc: c.podEvent,
	}); err != nil {
		return err
	}
	for _, kind := range []jobspec.Kind{jobspec.KindMPIJob, jobspec.KindPyTorchJob} {
		gvr, _ := resourceOf(kind)
		ok, err := c.serves(gvr)
		if err != nil {
			return err
		}
		if !ok {
			c.log.Warn("the cluster does not serve this job kind; is its operator installed?", "kind", kind, "resource", gvr.String())
			continue
		}
		var set informerSet
		for _, f := range c.objectFactories {
			set = append(set, f.ForResource(gvr).Informer())
		}
		if err := set.addIndexers(cache.Indexers{indexJob: byJob}); err != nil {
			return fmt.Errorf("kubernetes: index %s: %w", gvr.Resource, err)
		}
		if err := set.addEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.objectEvent(obj, false) },
			UpdateFunc: func(_, obj any) { c.objectEvent(obj, false) },
			DeleteFunc: func(obj any) { c.objectEvent(obj, true) },
		}); err != nil {
			return err
		}
		c.objects[kind] = set
	}
	c.nodeFactory.Start(ctx.Done())
	for i := range c.podFactories {
		c.podFactories[i].Start(ctx.Done())
		c.objectFactories[i].Start(ctx.Done())
	}
	synced := []cache.InformerSynced{c.nodes.HasSynced, c.pods.hasSynced}
	for _, set := range c.objects {
		synced = append(synced, set.hasSynced)
	}
	wait, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(wait.Done(), synced...) {
		return fmt.Errorf("kubernetes: caches did not sync: %w", context.Cause(wait))
	}
	return nil
}

// serves reports whether the API server serves a resource.
func (c *Client) serves(gvr schema.GroupVersionResource) (bool, error) {
	list, err := c.clientset.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		if isNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("kubernetes: discover %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// GPUTypes returns the GPU types the labelled nodes have, sorted.
func (c *Client) GPUTypes() []string {
	seen := map[string]bool{}
	for _, obj := range c.nodes.GetStore().List() {
		if t := obj.(*corev1.Node).Labels[jobspec.LabelAccelerator]; t != "" {
			seen[t] = true
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Pool returns a new view of one GPU type, for one leadership term: it
// replaces the type's previous view, which must be closed.
func (c *Client) Pool(gpuType string) *Pool {
	pool := newPool(c, gpuType)
	c.mu.Lock()
	c.pools[gpuType] = pool
	c.mu.Unlock()
	return pool
}

func (c *Client) release(pool *Pool) {
	c.mu.Lock()
	if c.pools[pool.gpuType] == pool {
		delete(c.pools, pool.gpuType)
	}
	c.mu.Unlock()
}

func (c *Client) pool(gpuType string) *Pool {
	if gpuType == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pools[gpuType]
}

func (c *Client) nodeEvent(oldObj, newObj any) {
	types := map[string]bool{}
	for _, o := range []any{oldObj, newObj} {
		if o == nil {
			continue
		}
		if m, err := metaOf(o); err == nil {
			types[m.GetLabels()[jobspec.LabelAccelerator]] = true
		}
	}
	for t := range types {
		if pool := c.pool(t); pool != nil {
			pool.nodesChanged()
		}
	}
}

func (c *Client) podEvent(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	if pool := c.pool(m.GetLabels()[LabelGPUType]); pool != nil {
		pool.enqueue(m.GetLabels()[LabelJob])
	}
}

func (c *Client) objectEvent(obj any, deleted bool) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	pool := c.pool(m.GetLabels()[LabelGPUType])
	if pool == nil {
		return
	}
	if deleted {
		pool.objectDeleted(m.GetLabels()[LabelJob], m.GetUID())
	}
	pool.enqueue(m.GetLabels()[LabelJob])
}

// object returns the cached job object of a Voda job.
func (c *Client) object(kind jobspec.Kind, job string) *unstructured.Unstructured {
	objs := c.objects[kind].byJob(job)
	if len(objs) == 0 {
		return nil
	}
	u, _ := objs[0].(*unstructured.Unstructured)
	return u
}

// workerPods returns the cached worker pods of a Voda job.
func (c *Client) workerPods(job string) []*corev1.Pod {
	objs := c.pods.byJob(job)
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}
