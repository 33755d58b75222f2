package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/scheduler"
)

var kinds = []jobspec.Kind{jobspec.KindMPIJob, jobspec.KindPyTorchJob}

// on builds a placement from node, workers pairs.
func on(pairs ...any) model.JobPlacement {
	var p model.JobPlacement
	for i := 0; i+1 < len(pairs); i += 2 {
		p = append(p, model.NodeWorkers{Node: pairs[i].(string), Workers: pairs[i+1].(int)})
	}
	return p
}

// apply tracks the job if needed and applies one action, failing the
// test on an error.
func (rp *runningPool) apply(t *testing.T, kind scheduler.ActionKind, job string, to model.JobPlacement) {
	t.Helper()
	if err := rp.Track(job, "", 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := rp.Apply(t.Context(), scheduler.Action{Kind: kind, Job: job, To: to}); err != nil {
		t.Fatalf("%s %s to %v: %v", kind, job, to, err)
	}
}

// vodaPodDeletes lists the pods Voda asked to delete: its deletes carry a UID
// precondition, the fake operator's none.
func (f *fakeCluster) vodaPodDeletes() []string {
	var out []string
	for _, a := range f.cs.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.GetResource().Resource == "pods" && d.DeleteOptions.Preconditions != nil {
			out = append(out, d.GetName())
		}
	}
	// A stale cache may send a delete again; the API server refuses the
	// repeat (UID precondition), so each pod counts once.
	slices.Sort(out)
	return slices.Compact(out)
}

// TestPoolStart: a start creates the kind's object with the decided
// worker count, Voda's labels and the placement gate, and the workers the
// operator then creates run, in rank order, on the decided nodes.
func TestPoolStart(t *testing.T) {
	for _, kind := range kinds {
		for _, tc := range []struct {
			name string
			to   model.JobPlacement
			want []string // node of each worker index
		}{
			{"two nodes", on("n1", 3, "n2", 1), []string{"n1", "n1", "n1", "n2"}},
			{"rank order is not name order", on("n3", 1, "n1", 2), []string{"n3", "n1", "n1"}},
			{"one worker", on("n2", 1), []string{"n2"}},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFakeCluster(t, "n1", "n2", "n3")
				f.addJob("a", kind, model.StatusWaiting)
				rp := f.startPool()
				rp.apply(t, scheduler.Start, "a", tc.to)

				obj := f.object(kind, "a")
				if obj == nil {
					t.Fatalf("no %s created in %s", kind, fakeGVR[kind])
				}
				if got := f.workers(kind, "a"); got != tc.to.Workers() {
					t.Errorf("worker replicas %d, want %d", got, tc.to.Workers())
				}
				if l := obj.GetLabels(); l[LabelJob] != "a" || l[LabelGPUType] != fakeGPUType || l[LabelManagedBy] != managedBy {
					t.Errorf("object labels %v", l)
				}
				tmpl := fakeWorkerPath(kind, "template", "spec")
				gates, _, _ := unstructured.NestedSlice(obj.Object, append(tmpl, "schedulingGates")...)
				selector, _, _ := unstructured.NestedString(obj.Object, append(tmpl, "nodeSelector", jobspec.LabelAccelerator)...)
				if len(gates) != 1 || gates[0].(map[string]any)["name"] != SchedulingGate || selector != fakeGPUType {
					t.Errorf("worker template: gates %v, node selector %q", gates, selector)
				}
				f.converge(kind, "a", tc.want...)
				if d := f.vodaPodDeletes(); len(d) != 0 {
					t.Errorf("a start deleted pods %v", d)
				}
				if n := f.objectCreates(); n != 1 {
					t.Errorf("%d creates of job objects, want 1", n)
				}
			})
		}
	}
}

// TestPoolResize: grow and shrink change the Worker replicas; migrate and
// shrink off a node delete only the workers on nodes holding more than the
// plan (highest index first), which come back gated and go where the plan
// has room; the other workers are left alone.
func TestPoolResize(t *testing.T) {
	for _, kind := range kinds {
		for _, tc := range []struct {
			name     string
			from     model.JobPlacement
			action   scheduler.ActionKind
			to       model.JobPlacement
			want     []string // node of each worker index
			deletes  []string // pods Voda deletes
			keepUIDs []int    // worker indices that keep their pod
		}{
			{"grow onto another node", on("n1", 2), scheduler.Grow, on("n1", 2, "n2", 2),
				[]string{"n1", "n1", "n2", "n2"}, nil, []int{0, 1}},
			{"grow on the same node", on("n1", 1), scheduler.Grow, on("n1", 3),
				[]string{"n1", "n1", "n1"}, nil, []int{0}},
			{"shrink", on("n1", 2, "n2", 2), scheduler.Shrink, on("n1", 2),
				[]string{"n1", "n1"}, nil, []int{0, 1}},
			{"shrink off the first node", on("n1", 2, "n2", 2), scheduler.Shrink, on("n2", 2),
				[]string{"n2", "n2"}, []string{"a-worker-0", "a-worker-1"}, nil},
			{"migrate all", on("n1", 2), scheduler.Migrate, on("n2", 2),
				[]string{"n2", "n2"}, []string{"a-worker-0", "a-worker-1"}, nil},
			{"migrate one", on("n1", 2), scheduler.Migrate, on("n1", 1, "n2", 1),
				[]string{"n1", "n2"}, []string{"a-worker-1"}, []int{0}},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFakeCluster(t, "n1", "n2")
				f.addJob("a", kind, model.StatusWaiting)
				rp := f.startPool()
				rp.apply(t, scheduler.Start, "a", tc.from)
				var fromNodes []string
				for _, nw := range tc.from {
					for range nw.Workers {
						fromNodes = append(fromNodes, nw.Node)
					}
				}
				f.converge(kind, "a", fromNodes...)
				before := f.pods("a")
				f.cs.ClearActions()

				rp.apply(t, tc.action, "a", tc.to)
				if got := f.workers(kind, "a"); got != tc.to.Workers() {
					t.Errorf("worker replicas %d, want %d", got, tc.to.Workers())
				}
				f.converge(kind, "a", tc.want...)
				if got := f.vodaPodDeletes(); !slices.Equal(got, tc.deletes) {
					t.Errorf("Voda deleted pods %v, want %v", got, tc.deletes)
				}
				after := f.pods("a")
				for _, i := range tc.keepUIDs {
					if after[i].UID != before[i].UID {
						t.Errorf("worker %d was replaced (UID %s, was %s)", i, after[i].UID, before[i].UID)
					}
				}
			})
		}
	}
}

// TestPoolGates: Voda lifts its gate only on its tracked job's worker
// pods, always with a required affinity for the chosen node added to every
// term the manifest gave, and leaves other gates alone.
func TestPoolGates(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			f := newFakeCluster(t, "n1", "n2")
			f.addJob("a", kind, model.StatusWaiting)
			// The manifest's own node affinity, two terms (ORed), and a
			// gate of someone else's.
			f.tweakWorker("a", func(spec map[string]any) {
				spec["affinity"] = map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
					"nodeSelectorTerms": []any{
						map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a"}}}},
						map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"b"}}}},
					},
				}}}
				spec["schedulingGates"] = []any{map[string]any{"name": "example.com/other"}}
			})
			rp := f.startPool()
			ctx := t.Context()
			// Gated pods that are not the job's workers: one of a job this
			// pool does not track, one without Voda's label.
			for name, labels := range map[string]map[string]string{
				"stranger-worker-0": {LabelJob: "stranger", LabelGPUType: fakeGPUType, LabelReplicaIndex: "0"},
				"unlabelled":        {LabelReplicaIndex: "0"},
			} {
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fakeNS, Labels: labels},
					Spec:       corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: SchedulingGate}}},
				}
				if _, err := f.cs.CoreV1().Pods(fakeNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			rp.apply(t, scheduler.Start, "a", on("n2", 1, "n1", 1))
			f.operate(kind, "a")
			want := []string{"n2", "n1"}
			f.waitFor("Voda's gate lifted on both workers", func() (bool, string) {
				pods := f.pods("a")
				for i, node := range want {
					p := pods[i]
					if hasGate(&p) {
						return false, fmt.Sprintf("worker %d still gated", i)
					}
					if got := affinityNode(&p); got != node {
						return false, fmt.Sprintf("worker %d affinity for %q, want %q", i, got, node)
					}
				}
				return true, ""
			})
			for i, p := range f.pods("a") {
				terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
				if len(terms) != 2 {
					t.Errorf("worker %d: %d affinity terms, want the manifest's 2", i, len(terms))
				}
				for _, term := range terms {
					if len(term.MatchExpressions) != 1 || term.MatchExpressions[0].Key != "zone" {
						t.Errorf("worker %d: the manifest's term lost: %+v", i, term)
					}
				}
				if len(p.Spec.SchedulingGates) != 1 || p.Spec.SchedulingGates[0].Name != "example.com/other" {
					t.Errorf("worker %d gates %v, want only the other one", i, p.Spec.SchedulingGates)
				}
			}
			for _, a := range f.podActions("patch", "delete") {
				if !strings.HasPrefix(a, "patch a-worker-") {
					t.Errorf("Voda touched a pod that is not the job's worker: %s", a)
				}
			}
			for _, name := range []string{"stranger-worker-0", "unlabelled"} {
				p, err := f.cs.CoreV1().Pods(fakeNS).Get(ctx, name, metav1.GetOptions{})
				if err != nil || !hasGate(p) || p.Spec.Affinity != nil {
					t.Errorf("pod %s: err %v, changed: %+v", name, err, p.Spec)
				}
			}
		})
	}
}

// tweakWorker changes the Worker pod spec of a stored job's manifest.
func (f *fakeCluster) tweakWorker(job string, change func(spec map[string]any)) {
	f.t.Helper()
	j, err := f.job(context.Background(), job)
	if err != nil {
		f.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(j.Manifest, &m); err != nil {
		f.t.Fatal(err)
	}
	path := fakeWorkerPath(j.Kind, "template", "spec")
	spec, _, err := unstructured.NestedMap(m, path...)
	if err != nil {
		f.t.Fatal(err)
	}
	change(spec)
	if err := unstructured.SetNestedMap(m, spec, path...); err != nil {
		f.t.Fatal(err)
	}
	if j.Manifest, err = json.Marshal(m); err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.jobs[job] = j
	f.mu.Unlock()
}

// TestPoolHalt: halting deletes the object of a running job (in the
// background, only the object Voda knows), keeps the object of a job that
// already ended, and does nothing for a job never started; none of them
// is reported as ended by itself.
func TestPoolHalt(t *testing.T) {
	for _, kind := range kinds {
		for _, tc := range []struct {
			name      string
			start     bool
			condition string // the object's terminal condition before the halt
			wantKept  bool
		}{
			{"running", true, "", false},
			{"ended", true, "Succeeded", true},
			{"never started", false, "", false},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFakeCluster(t, "n1")
				f.addJob("a", kind, model.StatusWaiting)
				rp := f.startPool()
				var uid types.UID
				if tc.start {
					rp.apply(t, scheduler.Start, "a", on("n1", 2))
					f.converge(kind, "a", "n1", "n1")
					uid = f.object(kind, "a").GetUID()
				}
				if tc.condition != "" {
					f.setCondition(kind, "a", tc.condition)
					f.waitFor("the pool to see the condition", func() (bool, string) {
						obj := rp.client.object(kind, "a")
						return obj != nil && jobCondition(obj) == tc.condition, "not in the cache yet"
					})
					<-rp.ended // reported once, by the reconciler
				}
				f.dyn.ClearActions()
				rp.apply(t, scheduler.Halt, "a", nil)

				var deletes []k8stesting.DeleteActionImpl
				for _, a := range f.dyn.Actions() {
					if d, ok := a.(k8stesting.DeleteActionImpl); ok {
						deletes = append(deletes, d)
					}
				}
				if tc.wantKept || !tc.start {
					if len(deletes) != 0 {
						t.Fatalf("deleted %v", deletes)
					}
					if tc.start && f.object(kind, "a") == nil {
						t.Fatal("the ended job's object is gone")
					}
					return
				}
				if len(deletes) != 1 || deletes[0].GetName() != "a" || deletes[0].GetResource() != fakeGVR[kind] {
					t.Fatalf("deletes %v, want one of %s a", deletes, fakeGVR[kind])
				}
				opts := deletes[0].DeleteOptions
				if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
					t.Errorf("propagation %v, want Background", opts.PropagationPolicy)
				}
				if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != uid {
					t.Errorf("preconditions %+v, want the object's UID %s", opts.Preconditions, uid)
				}
				// Once the deletion reaches the cache, a reconcile must not
				// take it for a deletion behind Voda's back.
				f.waitFor("the deletion in the cache", func() (bool, string) {
					return rp.client.object(kind, "a") == nil, "object still cached"
				})
				if err := rp.reconcile(t.Context(), "a"); err != nil {
					t.Fatal(err)
				}
				rp.mu.Lock()
				j := *rp.jobs["a"]
				rp.mu.Unlock()
				if j.gone || j.reported {
					t.Errorf("halted job taken as ended by itself: gone %v reported %v", j.gone, j.reported)
				}
			})
		}
	}
}

// setCondition gives a job's object a terminal condition, as the operator
// does when the job ends.
func (f *fakeCluster) setCondition(kind jobspec.Kind, name, condition string) {
	f.t.Helper()
	obj := f.object(kind, name)
	conds := []any{map[string]any{"type": "Created", "status": "True"}, map[string]any{"type": condition, "status": "True"}}
	if err := unstructured.SetNestedSlice(obj.Object, conds, "status", "conditions"); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.dyn.Resource(fakeGVR[kind]).Namespace(fakeNS).Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// TestPoolAdoptsAfterRestart: a new term (a new Client and Pool over the
// same cluster, as after a restart or a failover) starting the running
// jobs again adopts their objects and pods: no object created twice, no
// pod replaced; a changed size is patched onto the adopted object.
func TestPoolAdoptsAfterRestart(t *testing.T) {
	f := newFakeCluster(t, "n1", "n2")
	f.addJob("mpi", jobspec.KindMPIJob, model.StatusRunning)
	f.addJob("pt", jobspec.KindPyTorchJob, model.StatusRunning)
	first := f.startPool()
	first.apply(t, scheduler.Start, "mpi", on("n1", 2, "n2", 1))
	first.apply(t, scheduler.Start, "pt", on("n2", 1))
	f.converge(jobspec.KindMPIJob, "mpi", "n1", "n1", "n2")
	f.converge(jobspec.KindPyTorchJob, "pt", "n2")
	uids := map[string]types.UID{}
	pods := map[string]map[int]corev1.Pod{}
	for job, kind := range map[string]jobspec.Kind{"mpi": jobspec.KindMPIJob, "pt": jobspec.KindPyTorchJob} {
		uids[job] = f.object(kind, job).GetUID()
		pods[job] = f.pods(job)
	}
	first.stop()
	f.cs.ClearActions()
	f.dyn.ClearActions()

	second := f.startPool()
	second.apply(t, scheduler.Start, "mpi", on("n1", 2, "n2", 1))
	second.apply(t, scheduler.Start, "pt", on("n2", 2)) // grown meanwhile
	if got := f.workers(jobspec.KindMPIJob, "mpi"); got != 3 {
		t.Errorf("adopted MPIJob has %d workers, want 3", got)
	}
	if got := f.workers(jobspec.KindPyTorchJob, "pt"); got != 2 {
		t.Errorf("adopted PyTorchJob has %d workers, want the new 2", got)
	}
	f.converge(jobspec.KindMPIJob, "mpi", "n1", "n1", "n2")
	f.converge(jobspec.KindPyTorchJob, "pt", "n2", "n2")
	for job, kind := range map[string]jobspec.Kind{"mpi": jobspec.KindMPIJob, "pt": jobspec.KindPyTorchJob} {
		list, err := f.dyn.Resource(fakeGVR[kind]).Namespace(fakeNS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].GetUID() != uids[job] {
			t.Errorf("%s: %d objects after the restart, want the one with UID %s", job, len(list.Items), uids[job])
		}
		now := f.pods(job)
		for i, p := range pods[job] {
			if now[i].UID != p.UID {
				t.Errorf("%s worker %d replaced after the restart", job, i)
			}
		}
		second.mu.Lock()
		tracked := *second.jobs[job]
		second.mu.Unlock()
		if tracked.uid != uids[job] || tracked.kind != kind {
			t.Errorf("%s tracked as %s %s, want %s %s", job, tracked.kind, tracked.uid, kind, uids[job])
		}
	}
	if d := f.vodaPodDeletes(); len(d) != 0 {
		t.Errorf("the restart deleted pods %v", d)
	}
	// Halting after the restart deletes the adopted object.
	second.apply(t, scheduler.Halt, "pt", nil)
	if f.object(jobspec.KindPyTorchJob, "pt") != nil {
		t.Error("the adopted PyTorchJob survived its halt")
	}
}

// TestPoolRefusesObjects: a start does not adopt an object of the job's
// name that is not Voda's or is being deleted, and leaves it as it is.
func TestPoolRefusesObjects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(obj *unstructured.Unstructured)
		want  string
	}{
		{"not Voda's", func(obj *unstructured.Unstructured) { obj.SetLabels(map[string]string{"app": "mine"}) }, "is not Voda's"},
		{"being deleted", func(obj *unstructured.Unstructured) {
			obj.SetLabels(map[string]string{LabelJob: "a", LabelGPUType: fakeGPUType})
			obj.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)})
		}, "still being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeCluster(t, "n1")
			f.addJob("a", jobspec.KindPyTorchJob, model.StatusWaiting)
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("kubeflow.org/v1")
			obj.SetKind(string(jobspec.KindPyTorchJob))
			obj.SetName("a")
			obj.SetNamespace(fakeNS)
			tc.setup(obj)
			if _, err := f.dyn.Resource(fakeGVR[jobspec.KindPyTorchJob]).Namespace(fakeNS).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rp := f.startPool()
			if err := rp.Track("a", "", 0, 1, 0); err != nil {
				t.Fatal(err)
			}
			f.dyn.ClearActions()
			err := rp.Apply(t.Context(), scheduler.Action{Kind: scheduler.Start, Job: "a", To: on("n1", 1)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start: %v, want an error saying %q", err, tc.want)
			}
			for _, a := range f.dyn.Actions() {
				if a.GetVerb() != "create" && a.GetVerb() != "get" {
					t.Errorf("changed the object: %s", a.GetVerb())
				}
			}
		})
	}
}

// TestPoolEndedJobs: a job that ended is never created again. A stored
// terminal status refuses the start; an object that reached Succeeded or
// Failed, or was deleted behind Voda's back, ends the job through onDone
// and is neither placed, resized nor recreated afterwards.
func TestPoolEndedJobs(t *testing.T) {
	t.Run("stored status", func(t *testing.T) {
		for _, st := range []model.Status{model.StatusCompleted, model.StatusFailed, model.StatusCanceled} {
			for _, kind := range kinds {
				t.Run(string(kind)+"/"+string(st), func(t *testing.T) {
					t.Parallel()
					f := newFakeCluster(t, "n1")
					f.addJob("a", kind, st)
					rp := f.startPool()
					if err := rp.Track("a", "", 0, 1, 0); err != nil {
						t.Fatal(err)
					}
					err := rp.Apply(t.Context(), scheduler.Action{Kind: scheduler.Start, Job: "a", To: on("n1", 1)})
					if err == nil || !strings.Contains(err.Error(), "already ended") {
						t.Errorf("start of a %s job: %v, want a refusal", st, err)
					}
					if n := f.objectCreates(); n != 0 {
						t.Errorf("%d objects created", n)
					}
				})
			}
		}
	})
	for _, kind := range kinds {
		for _, tc := range []struct {
			name string
			end  func(f *fakeCluster, kind jobspec.Kind)
			want model.Status
		}{
			{"succeeded", func(f *fakeCluster, kind jobspec.Kind) { f.setCondition(kind, "a", "Succeeded") }, model.StatusCompleted},
			{"failed", func(f *fakeCluster, kind jobspec.Kind) { f.setCondition(kind, "a", "Failed") }, model.StatusFailed},
			{"deleted by hand", func(f *fakeCluster, kind jobspec.Kind) {
				if err := f.dyn.Resource(fakeGVR[kind]).Namespace(fakeNS).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
					f.t.Fatal(err)
				}
			}, model.StatusCanceled},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFakeCluster(t, "n1", "n2")
				f.addJob("a", kind, model.StatusRunning)
				rp := f.startPool()
				rp.apply(t, scheduler.Start, "a", on("n1", 2))
				f.converge(kind, "a", "n1", "n1")
				tc.end(f, kind)
				if got := <-rp.ended; got != (jobEnd{"a", tc.want}) {
					t.Errorf("reported %v, want a %s", got, tc.want)
				}
				// The scheduler finishes the job; a start from an older
				// copy of it (the resync race) must not run it again.
				f.addJob("a", kind, tc.want)
				f.cs.ClearActions()
				f.dyn.ClearActions()
				if err := rp.Apply(t.Context(), scheduler.Action{Kind: scheduler.Start, Job: "a", To: on("n2", 2)}); err == nil {
					t.Error("a stale start of the ended job was accepted")
				}
				// A worker the operator recreated late, gated: an ended job's
				// workers are not placed.
				late := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "a-worker-2", Namespace: fakeNS,
						Labels: map[string]string{LabelJob: "a", LabelGPUType: fakeGPUType, LabelReplicaIndex: "1"}},
					Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: SchedulingGate}}},
				}
				if err := f.cs.CoreV1().Pods(fakeNS).Delete(t.Context(), "a-worker-1", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := f.cs.CoreV1().Pods(fakeNS).Create(t.Context(), late, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				f.waitFor("the late worker in the cache", func() (bool, string) {
					return slices.ContainsFunc(rp.client.workerPods("a"), hasGate), "not cached yet"
				})
				f.cs.ClearActions()
				if err := rp.reconcile(t.Context(), "a"); err != nil {
					t.Fatal(err)
				}
				for _, a := range f.dyn.Actions() {
					if a.GetVerb() != "get" {
						t.Errorf("the ended job's object got a %s", a.GetVerb())
					}
				}
				if a := f.podActions("patch", "delete", "create"); len(a) != 0 {
					t.Errorf("the ended job's pods changed: %v", a)
				}
			})
		}
	}
}

// TestPoolAdoptsEndedObject: a job whose object ended while no scheduler
// ran is adopted as it is, not resized, and its end reported.
func TestPoolAdoptsEndedObject(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			f := newFakeCluster(t, "n1")
			f.addJob("a", kind, model.StatusRunning)
			first := f.startPool()
			first.apply(t, scheduler.Start, "a", on("n1", 1))
			first.stop()
			f.setCondition(kind, "a", "Succeeded")

			second := f.startPool()
			f.dyn.ClearActions()
			second.apply(t, scheduler.Start, "a", on("n1", 3))
			if got := <-second.ended; got != (jobEnd{"a", model.StatusCompleted}) {
				t.Errorf("reported %v, want Completed", got)
			}
			for _, a := range f.dyn.Actions() {
				if v := a.GetVerb(); v != "create" && v != "get" {
					t.Errorf("the ended object got a %s", v)
				}
			}
			if got := f.workers(kind, "a"); got != 1 {
				t.Errorf("ended object resized to %d workers", got)
			}
		})
	}
}

// TestPoolNudgesLauncher: once the operator's host list names exactly the
// running workers, the MPIJob's launcher gets the list's digest as an
// annotation, so its kubelet refreshes the mounted script at once.
func TestPoolNudgesLauncher(t *testing.T) {
	f := newFakeCluster(t, "n1")
	f.addJob("a", jobspec.KindMPIJob, model.StatusRunning)
	ctx := t.Context()
	launcher := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-launcher", Namespace: fakeNS,
		Labels: map[string]string{labelJobName: "a", labelJobRole: "launcher"}}}
	if _, err := f.cs.CoreV1().Pods(fakeNS).Create(ctx, launcher, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rp := f.startPool()
	rp.apply(t, scheduler.Start, "a", on("n1", 2))
	f.converge(jobspec.KindMPIJob, "a", "n1", "n1")

	setScript := func(script string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a-config", Namespace: fakeNS},
			Data: map[string]string{discoverHostsScript: script}}
		if _, err := f.cs.CoreV1().ConfigMaps(fakeNS).Update(ctx, cm, metav1.UpdateOptions{}); isNotFound(err) {
			_, err = f.cs.CoreV1().ConfigMaps(fakeNS).Create(ctx, cm, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	annotation := func() string {
		p, err := f.cs.CoreV1().Pods(fakeNS).Get(ctx, "a-launcher", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Annotations[AnnotationHosts]
	}
	// The operator has listed one of the two workers so far: no nudge.
	stale := "echo a-worker-0.a.jobs.svc\n"
	setScript(stale)
	// Then both: the nudge carries the digest of the full script.
	full := stale + "echo a-worker-1.a.jobs.svc\n"
	setScript(full)
	sum := sha256.Sum256([]byte(full))
	want := hex.EncodeToString(sum[:8])
	f.waitFor("the launcher annotated", func() (bool, string) {
		got := annotation()
		return got == want, fmt.Sprintf("annotation %q, want %q", got, want)
	})
}

// TestPoolNodes: the pool sees the Ready nodes of its GPU type that have
// GPUs, cordoned ones marked, and lists the others of its type as not
// ready.
func TestPoolNodes(t *testing.T) {
	f := newFakeCluster(t, "ready")
	ctx := t.Context()
	gpus := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	readyIs := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}
	}
	for _, n := range []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "cordoned"}, Spec: corev1.NodeSpec{Unschedulable: true},
			Status: corev1.NodeStatus{Allocatable: gpus(8), Conditions: readyIs(corev1.ConditionTrue)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "not-ready"}, Status: corev1.NodeStatus{Allocatable: gpus(2), Conditions: readyIs(corev1.ConditionFalse)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "unknown"}, Status: corev1.NodeStatus{Allocatable: gpus(2)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deleting", DeletionTimestamp: &metav1.Time{Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}, Finalizers: []string{"x"}},
			Status: corev1.NodeStatus{Allocatable: gpus(2), Conditions: readyIs(corev1.ConditionTrue)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "no-gpus"}, Status: corev1.NodeStatus{Conditions: readyIs(corev1.ConditionTrue)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other-type", Labels: map[string]string{jobspec.LabelAccelerator: "a100"}},
			Status: corev1.NodeStatus{Allocatable: gpus(8), Conditions: readyIs(corev1.ConditionTrue)}},
	} {
		if n.Labels == nil {
			n.Labels = map[string]string{jobspec.LabelAccelerator: fakeGPUType}
		}
		if _, err := f.cs.CoreV1().Nodes().Create(ctx, &n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rp := f.startPool()
	want := []model.Node{{Name: "cordoned", GPUs: 8, Cordoned: true}, {Name: "ready", GPUs: fakeGPUs}}
	if got := rp.Nodes(); !slices.Equal(got, want) {
		t.Errorf("Nodes() = %v, want %v", got, want)
	}
	wantNotReady := []model.Node{{Name: "deleting", GPUs: 2}, {Name: "not-ready", GPUs: 2}, {Name: "unknown", GPUs: 2}}
	if got := rp.NotReadyNodes(); !slices.Equal(got, wantNotReady) {
		t.Errorf("NotReadyNodes() = %v, want %v", got, wantNotReady)
	}
	if got := rp.client.GPUTypes(); !slices.Equal(got, []string{"a100", fakeGPUType}) {
		t.Errorf("GPUTypes() = %v", got)
	}
	// A node's change reaches the pool's scheduler as a signal.
	select {
	case <-rp.NodesChanged(): // one pending from before: not this one
	default:
	}
	if err := f.cs.CoreV1().Nodes().Delete(ctx, "not-ready", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rp.NodesChanged():
	case <-time.After(waitLimit):
		t.Fatal("no NodesChanged signal after a node was deleted")
	}
}
