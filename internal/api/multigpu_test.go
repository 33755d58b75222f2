package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/store"
)

// withWorkerGPUs gives mpiJob's worker container g GPUs (nvidia.com/gpu);
// slotsPerWorker is left out, so the parser sets it to g.
func withWorkerGPUs(manifest, g string) string {
	return strings.Replace(manifest, "[{name: worker}]", "[{name: worker, resources: {limits: {nvidia.com/gpu: "+g+"}}}]", 1)
}

// TestMultiGPUWorkersSubmitted: Config.MultiGPUWorkers reaches the parser.
// Off (the default), a manifest whose workers hold several GPUs is a 400
// naming the worker's nvidia.com/gpu; on, the job is stored and shown with
// its G, its workers (none yet, it waits) and its GPUs held (none).
func TestMultiGPUWorkersSubmitted(t *testing.T) {
	t.Parallel()
	const gpuField = "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]"
	for _, c := range []struct {
		name   string
		multi  bool
		g      string // "" for no nvidia.com/gpu: one GPU per worker
		wantG  int    // 0: refused
		wantOK bool
	}{
		{name: "off, no GPUs named", multi: false, g: "", wantG: 1, wantOK: true},
		{name: "off, G=1", multi: false, g: "1", wantG: 1, wantOK: true},
		{name: "off, G=2", multi: false, g: "2"},
		{name: "on, G=1", multi: true, g: "1", wantG: 1, wantOK: true},
		{name: "on, G=2", multi: true, g: "2", wantG: 2, wantOK: true},
		{name: "on, G=4", multi: true, g: "4", wantG: 4, wantOK: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureWith(t, func(cfg *Config) { cfg.MultiGPUWorkers = c.multi })
			if f.srv.spec.MultiGPUWorkers != c.multi {
				t.Fatalf("parser's MultiGPUWorkers %v, want %v", f.srv.spec.MultiGPUWorkers, c.multi)
			}
			manifest := mpiJob("multi", "1", "3", "v100")
			if c.g != "" {
				manifest = withWorkerGPUs(manifest, c.g)
			}
			code, b := f.do("POST", RouteJobs, "application/yaml", manifest)
			if !c.wantOK {
				var e Error
				_ = json.Unmarshal(b, &e)
				if code != http.StatusBadRequest || e.Error.Field != gpuField || !strings.Contains(e.Error.Message, "not accepted yet") {
					t.Fatalf("submit: %d %s, want a 400 naming %s", code, b, gpuField)
				}
				return
			}
			if code != http.StatusCreated {
				t.Fatalf("submit: %d %s", code, b)
			}
			var created Job
			if err := json.Unmarshal(b, &created); err != nil {
				t.Fatal(err)
			}
			// The stored job, read back, shows the same.
			code, b = f.do("GET", "/api/v1/jobs/"+created.Name, "", "")
			var got Job
			if err := json.Unmarshal(b, &got); err != nil || code != http.StatusOK {
				t.Fatalf("get: %d %s", code, b)
			}
			type shape struct{ G, Workers, GPUs, Min, Max int }
			want := shape{G: c.wantG, Workers: 0, GPUs: 0, Min: 1, Max: 3}
			for name, j := range map[string]Job{"created": created, "got": got} {
				if diff := cmp.Diff(want, shape{j.GPUsPerWorker, j.Workers, j.GPUs, j.MinWorkers, j.MaxWorkers}); diff != "" {
					t.Errorf("%s job (-want,+got):\n%s", name, diff)
				}
			}
		})
	}
}

// TestViewCountsWorkersOfGGPUs: a job's view counts its workers as pods
// and its GPUs as workers x G, now and in its allocation history, and
// estimates its finish on the GPUs it holds (the speedup curve is by GPU).
func TestViewCountsWorkersOfGGPUs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	placed := t0.Add(-time.Hour)
	grown := t0.Add(-30 * time.Minute)
	reported, err := json.Marshal(progress.State{At: t0})
	if err != nil {
		t.Fatal(err)
	}
	// Remaining 3600 s on one GPU: 400 s at the speedup on 8 GPUs (9),
	// 1800 s at the one on 2 (2).
	est := model.Estimates{RemainingSeconds: 3600, Speedup: []float64{0, 1, 2, 2.5, 4, 4.5, 5, 6, 9}}
	job := func(g, gpus int, p model.JobPlacement, history []store.Allocation) store.Job {
		j := store.Job{Name: "big-20261121-083015", Kind: "MPIJob", Progress: reported,
			Spec: model.JobSpec{GPUType: "v100", MinWorkers: 1, MaxWorkers: 2, RequestedWorkers: 2, GPUsPerWorker: g, SubmitTime: placed}}
		j.Status.State = model.JobState{Status: model.StatusRunning, GPUs: gpus, Placement: p, LastChange: grown}
		j.Status.Updated, j.Status.Allocations, j.Status.Est = t0, history, est
		return j
	}
	two := model.JobPlacement{{Node: "n0", Workers: 1}, {Node: "n1", Workers: 1}}
	history := []store.Allocation{
		{At: placed, Placement: model.JobPlacement{{Node: "n0", Workers: 1}}},
		{At: grown, Placement: two},
	}
	finishAt := func(sec float64) *time.Time { t := t0.Add(time.Duration(sec) * time.Second); return &t }
	type shape struct {
		G, Workers, GPUs int
		Placement        map[string]int
		Allocations      []Allocation
		EstimatedFinish  *time.Time
	}
	for _, c := range []struct {
		name string
		j    store.Job
		want shape
	}{
		{
			name: "G=4 on 2 workers holds 8 GPUs",
			j:    job(4, 8, two, history),
			want: shape{G: 4, Workers: 2, GPUs: 8, Placement: map[string]int{"n0": 1, "n1": 1},
				Allocations: []Allocation{
					{Time: placed, Workers: 1, GPUs: 4, Placement: map[string]int{"n0": 1}},
					{Time: grown, Workers: 2, GPUs: 8, Placement: map[string]int{"n0": 1, "n1": 1}},
				},
				EstimatedFinish: finishAt(400)},
		},
		{
			name: "G=1 (stored as 0) on 2 workers holds 2 GPUs",
			j:    job(0, 2, two, history),
			want: shape{G: 1, Workers: 2, GPUs: 2, Placement: map[string]int{"n0": 1, "n1": 1},
				Allocations: []Allocation{
					{Time: placed, Workers: 1, GPUs: 1, Placement: map[string]int{"n0": 1}},
					{Time: grown, Workers: 2, GPUs: 2, Placement: map[string]int{"n0": 1, "n1": 1}},
				},
				EstimatedFinish: finishAt(1800)},
		},
		{
			name: "G=2 waiting holds none",
			j: func() store.Job {
				j := job(2, 0, nil, nil)
				j.Status.State.Status = model.StatusWaiting
				return j
			}(),
			want: shape{G: 2},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := f.srv.view(c.j, "ElasticFIFO", t0)
			got := shape{v.GPUsPerWorker, v.Workers, v.GPUs, v.Placement, v.Allocations, v.EstimatedFinish}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("view (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestNodesViewCountsGPUsOfWorkers: on a node, a job's workers of G GPUs
// hold workers x G of its GPUs; the free GPUs are what they leave, and a
// job the caller may not see is folded into the busy entry with its GPUs.
func TestNodesViewCountsGPUsOfWorkers(t *testing.T) {
	t.Parallel()
	rec := store.Scheduler{}
	rec.Status.NodeStates = []store.NodeState{{Name: "n0", GPUs: 8}, {Name: "n1", GPUs: 8}, {Name: "n2", GPUs: 4}}
	holders := []holder{
		{name: "a", namespace: "team-a", kind: "MPIJob", gpuType: "v100", workers: 2, perWorker: 4, placement: map[string]int{"n0": 1, "n1": 1}},
		{name: "b", namespace: "team-b", kind: "MPIJob", gpuType: "v100", workers: 3, perWorker: 1, placement: map[string]int{"n0": 2, "n2": 1}},
		{name: "c", namespace: "team-b", kind: "PyTorchJob", gpuType: "v100", workers: 1, perWorker: 2, placement: map[string]int{"n0": 1}},
		{name: "d", namespace: "team-a", kind: "MPIJob", gpuType: "a100", workers: 1, perWorker: 8, placement: map[string]int{"n1": 1}},
	}
	view, _ := nodesView("v100", rec, holders)
	want := GPUTypeNodes{GPUType: "v100", Nodes: []Node{
		{Name: "n0", GPUs: 8, Ready: true, FreeGPUs: 0, Jobs: []NodeJob{
			{Name: "a", Namespace: "team-a", Workers: 1, GPUs: 4, JobWorkers: 2},
			{Name: "b", Namespace: "team-b", Workers: 2, GPUs: 2, JobWorkers: 3},
			{Name: "c", Namespace: "team-b", Workers: 1, GPUs: 2, JobWorkers: 1},
		}},
		{Name: "n1", GPUs: 8, Ready: true, FreeGPUs: 4, Jobs: []NodeJob{
			{Name: "a", Namespace: "team-a", Workers: 1, GPUs: 4, JobWorkers: 2},
		}},
		{Name: "n2", GPUs: 4, Ready: true, FreeGPUs: 3, Jobs: []NodeJob{
			{Name: "b", Namespace: "team-b", Workers: 1, GPUs: 1, JobWorkers: 3},
		}},
	}}
	if diff := cmp.Diff(want, view); diff != "" {
		t.Errorf("nodes view (-want,+got):\n%s", diff)
	}
	kinds := map[string]string{"a": "MPIJob", "b": "MPIJob", "c": "PyTorchJob"}
	teamA := redact(view, kinds, func(namespace, _ string) bool { return namespace == "team-a" })
	wantN0 := []NodeJob{
		{Name: "a", Namespace: "team-a", Workers: 1, GPUs: 4, JobWorkers: 2},
		{Workers: 3, GPUs: 4, Busy: true},
	}
	if diff := cmp.Diff(wantN0, teamA.Nodes[0].Jobs); diff != "" {
		t.Errorf("n0 as team-a sees it (-want,+got):\n%s", diff)
	}
	if got := teamA.Nodes[0].FreeGPUs; got != 0 {
		t.Errorf("n0 as team-a sees it: %d free GPUs, want 0", got)
	}
}

// TestHolderOfCountsWorkers: a live job's holder entry has its workers
// (GPUs held over G) and G, from its stored record.
func TestHolderOfCountsWorkers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	j := store.Job{Name: "h", Kind: "MPIJob", Spec: model.JobSpec{GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, GPUsPerWorker: 4}}
	j.Status.State = model.JobState{Status: model.StatusRunning, GPUs: 12,
		Placement: model.JobPlacement{{Node: "n0", Workers: 2}, {Node: "n1", Workers: 1}}}
	h, ok := f.srv.holderOf(j)
	if !ok || h.workers != 3 || h.perWorker != 4 || h.placement["n0"] != 2 || h.placement["n1"] != 1 {
		t.Errorf("holderOf = %+v, %v; want 3 workers of 4 GPUs, n0:2 n1:1", h, ok)
	}
}
