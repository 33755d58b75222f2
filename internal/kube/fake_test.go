package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/model"
)

// The unit tests of Pool run it on client-go's fake clients. The fakes
// store objects but run no controller, so fakeCluster plays the parts
// Voda relies on: the operator (worker pods from the object's Worker
// template and replicas) and kube-scheduler (binding an ungated pod to
// the node its affinity names).

const (
	fakeNS      = "jobs"
	fakeGPUType = "v100"
	fakeGPUs    = 4 // per node
	// waitLimit bounds every wait for the Pool's reconciler; the fakes
	// answer in microseconds, so only a defect takes this long.
	waitLimit = 5 * time.Second
)

// fakeGVR is where each kind's objects live, written out here rather
// than taken from resourceOf so that a wrong resource fails the tests.
var fakeGVR = map[jobspec.Kind]schema.GroupVersionResource{
	jobspec.KindMPIJob:     {Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"},
	jobspec.KindPyTorchJob: {Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"},
}

// fakeWorkerPath is the path of a field of a kind's Worker replica spec,
// written out here (not workerPath) so that a wrong path fails the tests.
func fakeWorkerPath(kind jobspec.Kind, field ...string) []string {
	specs := "mpiReplicaSpecs"
	if kind == jobspec.KindPyTorchJob {
		specs = "pytorchReplicaSpecs"
	}
	return append([]string{"spec", specs, "Worker"}, field...)
}

type fakeCluster struct {
	t   *testing.T
	cs  *k8sfake.Clientset
	dyn *dynamicfake.FakeDynamicClient
	uid atomic.Int64

	mu      sync.Mutex
	jobs    map[string]Job
	watches map[string]int // resource -> watches opened
}

// newFakeCluster returns a cluster of Ready nodes of fakeGPUType with
// fakeGPUs each, serving both job kinds.
func newFakeCluster(t *testing.T, nodes ...string) *fakeCluster {
	t.Helper()
	f := &fakeCluster{t: t, jobs: map[string]Job{}, watches: map[string]int{}}
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{jobspec.LabelAccelerator: fakeGPUType}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{ResourceGPU: *resource.NewQuantity(fakeGPUs, resource.DecimalSI)},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		})
	}
	f.cs = k8sfake.NewClientset(objs...)
	f.cs.Resources = []*metav1.APIResourceList{
		{GroupVersion: "kubeflow.org/v2beta1", APIResources: []metav1.APIResource{{Name: "mpijobs", Namespaced: true, Kind: "MPIJob"}}},
		{GroupVersion: "kubeflow.org/v1", APIResources: []metav1.APIResource{{Name: "pytorchjobs", Namespaced: true, Kind: "PyTorchJob"}}},
	}
	f.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fakeGVR[jobspec.KindMPIJob]:     "MPIJobList",
		fakeGVR[jobspec.KindPyTorchJob]: "PyTorchJobList",
	})
	for _, fake := range []*k8stesting.Fake{&f.cs.Fake, &f.dyn.Fake} {
		// The trackers give no UIDs, and Voda's deletes and adoption
		// depend on them.
		fake.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if m, err := meta.Accessor(a.(k8stesting.CreateAction).GetObject()); err == nil && m.GetUID() == "" {
				m.SetUID(types.UID(fmt.Sprintf("uid-%d", f.uid.Add(1))))
			}
			return false, nil, nil
		})
		// The API server refuses a delete or a patch whose UID
		// precondition names another object (a pod recreated under the
		// same name); the trackers ignore it, so a stale cache would make
		// Voda delete or place the new pod.
		fake.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			d := a.(k8stesting.DeleteActionImpl)
			if p := d.DeleteOptions.Preconditions; p != nil && p.UID != nil {
				return f.checkUID(fake, a, d.GetName(), *p.UID)
			}
			return false, nil, nil
		})
		fake.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			p := a.(k8stesting.PatchActionImpl)
			var patch struct {
				Metadata struct {
					UID types.UID `json:"uid"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(p.GetPatch(), &patch); err == nil && patch.Metadata.UID != "" {
				return f.checkUID(fake, a, p.GetName(), patch.Metadata.UID)
			}
			return false, nil, nil
		})
		// Counting the watches opened tells when an informer can no longer
		// miss an event: the fakes do not replay from a resourceVersion.
		// The fake holds its lock across the chain, so the watch is
		// registered before anyone can see the count.
		fake.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
			f.mu.Lock()
			f.watches[a.GetResource().Resource]++
			f.mu.Unlock()
			return false, nil, nil
		})
	}
	return f
}

// checkUID answers a call whose precondition is uid as the API server
// does: NotFound without the object, Conflict if it is another one, on to
// the tracker otherwise.
func (f *fakeCluster) checkUID(fake *k8stesting.Fake, a k8stesting.Action, name string, uid types.UID) (bool, runtime.Object, error) {
	tracker := f.dyn.Tracker()
	if fake == &f.cs.Fake {
		tracker = f.cs.Tracker()
	}
	obj, err := tracker.Get(a.GetResource(), a.GetNamespace(), name)
	if err != nil {
		return true, nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return true, nil, err
	}
	if m.GetUID() != uid {
		return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", uid, m.GetUID()))
	}
	return false, nil, nil
}

// addJob stores a job of kind with a minimal manifest, as the job source
// gives it to the Pool.
func (f *fakeCluster) addJob(name string, kind jobspec.Kind, status model.Status) {
	container := []any{map[string]any{"name": "trainer", "image": "trainer:1"}}
	replica := func(n int) map[string]any {
		return map[string]any{"replicas": n, "template": map[string]any{"spec": map[string]any{"containers": container}}}
	}
	spec := map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": replica(1)}}
	if kind == jobspec.KindMPIJob {
		spec = map[string]any{"mpiReplicaSpecs": map[string]any{"Launcher": replica(1), "Worker": replica(1)}}
	}
	manifest, err := json.Marshal(map[string]any{"kind": kind, "metadata": map[string]any{"name": name}, "spec": spec})
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.jobs[name] = Job{Kind: kind, Manifest: manifest, Status: status}
	f.mu.Unlock()
}

func (f *fakeCluster) job(_ context.Context, name string) (Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[name]
	if !ok {
		return Job{}, fmt.Errorf("job %s not stored", name)
	}
	return j, nil
}

func (f *fakeCluster) watchCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.watches)
}

// runningPool is one scheduler term: a Client started on the fakes and
// its Pool reconciling until the term's context ends.
type runningPool struct {
	*Pool
	client *Client
	ended  chan jobEnd // what the Pool reported through onDone
	stop   func()      // ends the term and waits for Run to return
}

type jobEnd struct {
	name   string
	status model.Status
}

// startPool starts a Client and runs its Pool of fakeGPUType until the
// test ends or stop is called.
func (f *fakeCluster) startPool() *runningPool {
	f.t.Helper()
	ctx, cancel := context.WithCancel(f.t.Context())
	before := f.watchCounts()
	client := newClient(Options{Namespace: fakeNS, Jobs: f.job}, f.cs, f.dyn)
	if err := client.Start(ctx); err != nil {
		cancel()
		f.t.Fatalf("start client: %v", err)
	}
	f.waitFor("the informers to watch", func() (bool, string) {
		now := f.watchCounts()
		for _, r := range []string{"nodes", "pods", "mpijobs", "pytorchjobs"} {
			if now[r] <= before[r] {
				return false, "no watch of " + r
			}
		}
		return true, ""
	})
	rp := &runningPool{Pool: client.Pool(fakeGPUType), client: client, ended: make(chan jobEnd, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rp.Run(ctx, func(name string, status model.Status) { rp.ended <- jobEnd{name, status} })
	}()
	var once sync.Once
	rp.stop = func() { once.Do(func() { cancel(); <-done }) }
	f.t.Cleanup(rp.stop)
	return rp
}

// waitFor polls cond until it holds, failing the test with cond's last
// explanation after waitLimit.
func (f *fakeCluster) waitFor(what string, cond func() (bool, string)) {
	f.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("waiting for %s: %s", what, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// object returns a job's object, or nil if there is none.
func (f *fakeCluster) object(kind jobspec.Kind, name string) *unstructured.Unstructured {
	f.t.Helper()
	obj, err := f.dyn.Resource(fakeGVR[kind]).Namespace(fakeNS).Get(context.Background(), name, metav1.GetOptions{})
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatalf("get %s %s: %v", kind, name, err)
	}
	return obj
}

// workers returns the Worker replicas of a job's object (-1 without one).
func (f *fakeCluster) workers(kind jobspec.Kind, name string) int {
	obj := f.object(kind, name)
	if obj == nil {
		return -1
	}
	n, _, _ := unstructured.NestedInt64(obj.Object, fakeWorkerPath(kind, "replicas")...)
	return int(n)
}

// pods returns the pods labelled with a job's name, by replica index.
func (f *fakeCluster) pods(job string) map[int]corev1.Pod {
	f.t.Helper()
	list, err := f.cs.CoreV1().Pods(fakeNS).List(context.Background(), metav1.ListOptions{LabelSelector: LabelJob + "=" + job})
	if err != nil {
		f.t.Fatalf("list pods of %s: %v", job, err)
	}
	out := map[int]corev1.Pod{}
	for _, p := range list.Items {
		i, err := strconv.Atoi(p.Labels[LabelReplicaIndex])
		if err != nil {
			f.t.Fatalf("pod %s: replica index %q", p.Name, p.Labels[LabelReplicaIndex])
		}
		out[i] = p
	}
	return out
}

// operate does what the operator would for a job's object: a pod for
// every missing worker index below the replicas, from the Worker template
// (so gated), and no pod at or above it. Without the object it does
// nothing (cascading deletion is not what these tests look at).
func (f *fakeCluster) operate(kind jobspec.Kind, job string) {
	f.t.Helper()
	ctx := context.Background()
	obj := f.object(kind, job)
	if obj == nil {
		return
	}
	replicas := f.workers(kind, job)
	tmpl, _, err := unstructured.NestedMap(obj.Object, fakeWorkerPath(kind, "template")...)
	if err != nil {
		f.t.Fatalf("%s %s worker template: %v", kind, job, err)
	}
	var pt corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pt); err != nil {
		f.t.Fatalf("%s %s worker template: %v", kind, job, err)
	}
	pods := f.pods(job)
	for i, p := range pods {
		if i >= replicas {
			if err := f.cs.CoreV1().Pods(fakeNS).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				f.t.Fatalf("operator: delete pod %s: %v", p.Name, err)
			}
		}
	}
	for i := range replicas {
		if _, ok := pods[i]; ok {
			continue
		}
		p := &corev1.Pod{ObjectMeta: *pt.ObjectMeta.DeepCopy(), Spec: *pt.Spec.DeepCopy()}
		p.Name, p.Namespace = fmt.Sprintf("%s-worker-%d", job, i), fakeNS
		p.UID = "" // set by the create reactor
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[LabelReplicaIndex] = strconv.Itoa(i)
		p.Labels[labelJobName] = job
		p.Labels[labelJobRole] = "worker"
		p.Status.Phase = corev1.PodPending
		if _, err := f.cs.CoreV1().Pods(fakeNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			f.t.Fatalf("operator: create pod %s: %v", p.Name, err)
		}
	}
}

// affinityNode is the one node every required node affinity term of p
// names by metadata.name, or "" if the terms do not all name one node.
func affinityNode(p *corev1.Pod) string {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	node := ""
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		named := ""
		for _, r := range term.MatchFields {
			if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				named = r.Values[0]
			}
		}
		if named == "" || (node != "" && named != node) {
			return ""
		}
		node = named
	}
	return node
}

// schedule does what kube-scheduler would for a job's pods: an ungated,
// unbound pod runs on the node its affinity names. A pod ungated without
// naming one node fails the test: kube-scheduler would put it anywhere.
func (f *fakeCluster) schedule(job string) {
	f.t.Helper()
	for _, p := range f.pods(job) {
		if len(p.Spec.SchedulingGates) > 0 || p.Spec.NodeName != "" {
			continue
		}
		node := affinityNode(&p)
		if node == "" {
			f.t.Fatalf("pod %s lost its gate without a node affinity: %+v", p.Name, p.Spec.Affinity)
		}
		p.Spec.NodeName, p.Status.Phase = node, corev1.PodRunning
		if _, err := f.cs.CoreV1().Pods(fakeNS).Update(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
			f.t.Fatalf("scheduler: bind pod %s: %v", p.Name, err)
		}
	}
}

// nodesOf lists the node of each worker index of a job ("" while gated),
// and describes the pods for a failure message.
func (f *fakeCluster) nodesOf(job string) ([]string, string) {
	pods := f.pods(job)
	out := make([]string, len(pods))
	var desc []string
	for _, i := range slices.Sorted(maps.Keys(pods)) {
		p := pods[i]
		if i < len(out) {
			out[i] = p.Spec.NodeName
		}
		desc = append(desc, fmt.Sprintf("%d:%s gates=%d", i, p.Spec.NodeName, len(p.Spec.SchedulingGates)))
	}
	return out, strings.Join(desc, " ")
}

// converge plays operator and scheduler until a job's workers, by index,
// run on the nodes want lists.
func (f *fakeCluster) converge(kind jobspec.Kind, job string, want ...string) {
	f.t.Helper()
	f.waitFor(fmt.Sprintf("%s's workers on %v", job, want), func() (bool, string) {
		f.operate(kind, job)
		f.schedule(job)
		got, desc := f.nodesOf(job)
		return slices.Equal(got, want), "pods " + desc
	})
}

// podActions returns the verbs of the calls made on pods since the
// fake was last cleared, as "verb name".
func (f *fakeCluster) podActions(verbs ...string) []string {
	var out []string
	for _, a := range f.cs.Actions() {
		if a.GetResource().Resource != "pods" || !slices.Contains(verbs, a.GetVerb()) {
			continue
		}
		name := ""
		switch a := a.(type) {
		case k8stesting.DeleteAction:
			name = a.GetName()
		case k8stesting.PatchAction:
			name = a.GetName()
		}
		out = append(out, a.GetVerb()+" "+name)
	}
	return out
}

// objectCreates counts the creates of job objects the fake received.
func (f *fakeCluster) objectCreates() int {
	n := 0
	for _, a := range f.dyn.Actions() {
		if a.GetVerb() == "create" {
			n++
		}
	}
	return n
}
