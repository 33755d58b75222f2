package kube

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api/client"
)

// TestHostileManifestsCreateNothing submits manifests that ask Kubernetes,
// through Voda's permissions, for more than a training job needs, to the
// binary on a real control plane: each is refused with a 400 naming its
// field, and the only object Voda creates is that of the one honest job
// submitted after them.
func TestHostileManifestsCreateNothing(t *testing.T) {
	const gpuType = "hostile-gpu"
	c := newCluster(t, gpuType, 1, 4)
	srv := c.start()
	vc := srv.Client()
	honest := string(mpiJob.manifest("honest", gpuType, 1, 4, time.Hour))
	worker := "        spec:\n          containers:\n          - name: worker\n"
	if !strings.Contains(honest, worker) {
		t.Fatal("the MPIJob manifest changed shape; update this test's edits")
	}
	inWorker := func(lines string) string {
		return strings.Replace(honest, worker, "        spec:\n"+lines+"          containers:\n          - name: worker\n", 1)
	}
	for _, tc := range []struct{ name, manifest, field string }{
		{"namespace kube-system", strings.Replace(honest, "metadata:\n  name: honest\n", "metadata:\n  name: honest\n  namespace: kube-system\n", 1), "metadata.namespace"},
		{"privileged init container", inWorker("          initContainers:\n          - name: init\n            image: busybox\n            securityContext: {privileged: true}\n"), "spec.mpiReplicaSpecs.Worker.template.spec"},
		{"hostPath /", inWorker("          volumes:\n          - name: root\n            hostPath: {path: /}\n"), "spec.mpiReplicaSpecs.Worker.template.spec"},
		{"hostNetwork", inWorker("          hostNetwork: true\n"), "spec.mpiReplicaSpecs.Worker.template.spec"},
		{"hostPID", inWorker("          hostPID: true\n"), "spec.mpiReplicaSpecs.Worker.template.spec"},
		{"nodeName", inWorker("          nodeName: " + c.nodes[0] + "\n"), "spec.mpiReplicaSpecs.Worker.template.spec.nodeName"},
		{"serviceAccountName", inWorker("          serviceAccountName: default\n"), "spec.mpiReplicaSpecs.Worker.template.spec.serviceAccountName"},
		{"tolerate everything", inWorker("          tolerations:\n          - operator: Exists\n"), "spec.mpiReplicaSpecs.Worker.template.spec.tolerations"},
		{"another job's label", strings.Replace(honest, "          annotations:\n", "          labels:\n            vodascheduler/job: someone-else\n          annotations:\n", 1),
			"spec.mpiReplicaSpecs.Launcher.template.metadata.labels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vc.CreateJob(t.Context(), []byte(tc.manifest))
			var apiErr *client.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.HasPrefix(apiErr.Field, tc.field) {
				t.Fatalf("CreateJob = %v, want a 400 naming %s", err, tc.field)
			}
			t.Logf("%d %s: %s", apiErr.StatusCode, apiErr.Field, apiErr.Message)
		})
	}
	name := submit(t, vc, []byte(honest))
	c.waitPlaced(t, vc, mpiJob, name, 4)
	if got := objects(t, mpiJob, c.ns); len(got) != 1 || got[0] != name {
		t.Errorf("MPIJobs in %s: %v, want only the honest job's %s", c.ns, got, name)
	}
	if got := objects(t, mpiJob, "kube-system"); len(got) != 0 {
		t.Errorf("MPIJobs in kube-system: %v, want none", got)
	}
}
