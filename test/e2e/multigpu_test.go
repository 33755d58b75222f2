package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// multiGPUManifest is an elastic MPIJob of 1 to 2 workers holding G GPUs
// each on v100 nodes, training 100 epochs of the default model (about 8 s
// of wall time on 8 GPUs at --speed 100, long enough to be seen running).
func multiGPUManifest(name, gpus string) string {
	return `apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: ` + name + `
spec:
  slotsPerWorker: ` + gpus + `
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: horovod/horovod:0.28.1
            env:
            - {name: MIN_NUM_PROC, value: "1"}
            - {name: MAX_NUM_PROC, value: "2"}
            - {name: EPOCHS, value: "100"}
    Worker:
      replicas: 1
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: v100
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
            resources:
              limits:
                nvidia.com/gpu: ` + gpus + `
`
}

// Workers of several GPUs against the running binary: by default a job
// of two workers of 4 GPUs runs on 8 GPUs and completes, and every
// manifest whose GPUs do not add up is a 400 naming its field; with
// --multi-gpu-workers=false, G > 1 is refused.
func TestMultiGPUWorkers(t *testing.T) {
	const workerGPU = "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]"
	off := startServer(t, "--sim-nodes", "v100=2x8", "--data-dir", t.TempDir(), "--log-level", "warn", "--multi-gpu-workers=false")
	if code, body, _, _ := post(t, off, []byte(multiGPUManifest("four", "4"))); code != http.StatusBadRequest ||
		!strings.Contains(body, workerGPU) || !strings.Contains(body, "not accepted yet") {
		t.Fatalf("G=4 with --multi-gpu-workers=false: %d %s, want 400 naming %s", code, body, workerGPU)
	}

	srv := startServer(t, "--sim-nodes", "v100=2x8", "--data-dir", t.TempDir(), "--log-level", "warn",
		"--speed", "100")
	base := multiGPUManifest("bad", "4")
	for _, tc := range []struct {
		name, manifest, field string
	}{
		{"G=0", multiGPUManifest("bad", "0"), workerGPU},
		{"G=-1", strings.Replace(base, "nvidia.com/gpu: 4", "nvidia.com/gpu: -1", 1), workerGPU},
		{"G=2.5", strings.Replace(base, "nvidia.com/gpu: 4", "nvidia.com/gpu: 2.5", 1), workerGPU},
		{`G="four"`, strings.Replace(base, "nvidia.com/gpu: 4", `nvidia.com/gpu: "four"`, 1), workerGPU},
		{"G=1000", strings.Replace(base, "nvidia.com/gpu: 4", "nvidia.com/gpu: 1000", 1), workerGPU},
		{"slotsPerWorker 1", strings.Replace(base, "slotsPerWorker: 4", "slotsPerWorker: 1", 1), "spec.slotsPerWorker"},
		{"GPUs on the launcher", strings.Replace(base, "          - name: launcher\n", "          - name: launcher\n            resources: {limits: {nvidia.com/gpu: 1}}\n", 1),
			"spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].resources.limits[nvidia.com/gpu]"},
		{"GPUs on an init container", strings.Replace(base, "          containers:\n          - name: worker\n", "          initContainers: [{name: warm, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]\n          containers:\n          - name: worker\n", 1),
			"spec.mpiReplicaSpecs.Worker.template.spec.initContainers[0].resources.limits[nvidia.com/gpu]"},
		{"GPUs on a sidecar", base + "          - {name: sidecar, image: envoyproxy/envoy:v1.30.1, resources: {limits: {nvidia.com/gpu: 4}}}\n",
			"spec.mpiReplicaSpecs.Worker.template.spec.containers[1].resources.limits[nvidia.com/gpu]"},
	} {
		code, body, _, _ := post(t, srv, []byte(tc.manifest))
		if code != http.StatusBadRequest || !strings.Contains(body, tc.field) {
			t.Errorf("%s: %d %.300s, want 400 naming %s", tc.name, code, body, tc.field)
		}
	}

	code, body, _, _ := post(t, srv, []byte(multiGPUManifest("four", "4")))
	if code != http.StatusCreated {
		t.Fatalf("G=4: %d %s", code, body)
	}
	name, _ := jsonField([]byte(body), "name")
	c := srv.Client()
	waitFor(t, "the job to run on two workers of 4 GPUs", 2*time.Minute, func() (bool, error) {
		j, err := c.GetJob(ctxT(t), name)
		if err != nil || j.Status == "Completed" {
			return false, err
		}
		return j.GPUsPerWorker == 4 && j.Workers == 2 && j.GPUs == 8, nil
	})
	j, err := c.GetJob(ctxT(t), name)
	if err != nil {
		t.Fatal(err)
	}
	for node, w := range j.Placement {
		if w*4 > 8 {
			t.Errorf("node %s holds %d workers of 4 GPUs, more than its 8", node, w)
		}
	}
	waitFor(t, "the job to complete", 2*time.Minute, func() (bool, error) {
		j, err := c.GetJob(ctxT(t), name)
		return err == nil && j.Status == "Completed", err
	})

	// Stranded GPUs: on one node of 8, a one-GPU job leaves 7 free that a
	// job of one worker of 8 waits for; voda_gpus_stranded says so.
	frag := startServer(t, "--sim-nodes", "v100=1x8", "--data-dir", t.TempDir(), "--log-level", "warn",
		"--speed", "10", "--multi-gpu-workers")
	one := strings.Replace(multiGPUManifest("one", "1"), `value: "2"}`, `value: "1"}`, 1)
	if code, body, _, _ := post(t, frag, []byte(one)); code != http.StatusCreated {
		t.Fatalf("one GPU: %d %s", code, body)
	}
	eight := strings.Replace(multiGPUManifest("eight", "8"), `value: "2"}`, `value: "1"}`, 1)
	if code, body, _, _ := post(t, frag, []byte(eight)); code != http.StatusCreated {
		t.Fatalf("G=8: %d %s", code, body)
	}
	waitFor(t, "voda_gpus_stranded to count the 7 GPUs the G=8 job cannot use", time.Minute, func() (bool, error) {
		v := metric(t, frag, `voda_gpus_stranded{gpu_type="v100"}`)
		return v == 7, fmt.Errorf("voda_gpus_stranded %v", v)
	})
}

// A simulated cluster whose v100 nodes differ in size (--sim-nodes
// v100=1x8+2x4): a job of workers of 8 GPUs that may grow to 2 runs on
// the one node that holds such a worker, offered no more than that one
// worker (before, ElasticFIFO gave it 16 GPUs that no placement holds and
// it waited for ever), and a job of workers of 4 runs on the 4-GPU nodes
// beside it.
func TestMixedNodeSizes(t *testing.T) {
	srv := startServer(t, "--sim-nodes", "v100=1x8+2x4", "--data-dir", t.TempDir(), "--log-level", "warn", "--speed", "20")
	c := srv.Client()
	waitFor(t, "the scheduler to show 16 GPUs on 3 nodes", time.Minute, func() (bool, error) {
		s, err := c.GetScheduler(ctxT(t), "v100")
		return err == nil && s.Nodes == 3 && s.GPUs == 16, fmt.Errorf("%d GPUs on %d nodes (%v)", s.GPUs, s.Nodes, err)
	})
	submit := func(g string) string {
		code, body, _, _ := post(t, srv, []byte(multiGPUManifest("g"+g, g)))
		if code != http.StatusCreated {
			t.Fatalf("G=%s: %d %s", g, code, body)
		}
		name, _ := jsonField([]byte(body), "name")
		return name
	}
	// Alone, the job of workers of 8 could use 16 GPUs: it gets the one
	// worker the nodes hold.
	wide := submit("8")
	waitFor(t, "the job of workers of 8 on the 8-GPU node", 2*time.Minute, func() (bool, error) {
		j, err := c.GetJob(ctxT(t), wide)
		return err == nil && j.GPUs == 8 && j.Placement["v100-node-00"] == 1,
			fmt.Errorf("%d GPUs on %v (%s, %v)", j.GPUs, j.Placement, j.Status, err)
	})
	narrow := submit("4")
	waitFor(t, "the job of workers of 4 on the 4-GPU nodes", 2*time.Minute, func() (bool, error) {
		j, err := c.GetJob(ctxT(t), narrow)
		return err == nil && j.GPUs == 8 && j.Placement["v100-node-00"] == 0,
			fmt.Errorf("%d GPUs on %v (%s, %v)", j.GPUs, j.Placement, j.Status, err)
	})
}
