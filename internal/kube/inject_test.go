package kube

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/jobspec"
)

// Every container of every pod template gets the report URL, the job's
// name and the token file, replacing what the manifest gave under those
// names; every pod the projected token volume of Voda's audience.
func TestInjectProgress(t *testing.T) {
	manifest := `{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "j-1"}, "spec": {"mpiReplicaSpecs": {
	  "Launcher": {"template": {"spec": {"containers": [{"name": "launcher", "env": [{"name": "VODA_JOB_NAME", "value": "forged"}, {"name": "X", "value": "1"}]}]}}},
	  "Worker": {"template": {"spec": {
	    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "vodascheduler-progress-token", "hostPath": {"path": "/"}}],
	    "containers": [{"name": "worker", "volumeMounts": [{"name": "data", "mountPath": "/var/run/secrets/vodascheduler.io"}]}, {"name": "sidecar"}]}}}}}}`
	var obj map[string]any
	if err := json.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatal(err)
	}
	Progress{URL: "http://voda.voda-system.svc:55587/"}.inject(obj, jobspec.KindMPIJob, "j-1")
	env := []any{
		map[string]any{"name": EnvProgressURL, "value": "http://voda.voda-system.svc:55587/api/v1/jobs/j-1/progress"},
		map[string]any{"name": EnvJobName, "value": "j-1"},
		map[string]any{"name": EnvTokenFile, "value": "/var/run/secrets/vodascheduler.io/token"},
	}
	mount := map[string]any{"name": progressVolume, "mountPath": progressMount, "readOnly": true}
	volume := map[string]any{"name": progressVolume, "projected": map[string]any{"sources": []any{map[string]any{"serviceAccountToken": map[string]any{
		"audience": DefaultProgressAudience, "expirationSeconds": int64(3600), "path": "token"}}}}}
	specs := obj["spec"].(map[string]any)["mpiReplicaSpecs"].(map[string]any)
	launcher := specs["Launcher"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	worker := specs["Worker"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"launcher env", launcher["containers"].([]any)[0].(map[string]any)["env"], append([]any{map[string]any{"name": "X", "value": "1"}}, env...)},
		{"launcher volumes", launcher["volumes"], []any{volume}},
		{"worker env", worker["containers"].([]any)[0].(map[string]any)["env"], env},
		{"worker mounts", worker["containers"].([]any)[0].(map[string]any)["volumeMounts"], []any{mount}},
		{"sidecar mounts", worker["containers"].([]any)[1].(map[string]any)["volumeMounts"], []any{mount}},
		{"worker volumes", worker["volumes"], []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}, volume}},
	} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", c.name, diff)
		}
	}
	// Without a URL nothing is injected.
	var plain map[string]any
	_ = json.Unmarshal([]byte(manifest), &plain)
	Progress{}.inject(plain, jobspec.KindMPIJob, "j-1")
	var again map[string]any
	_ = json.Unmarshal([]byte(manifest), &again)
	if diff := cmp.Diff(again, plain); diff != "" {
		t.Errorf("injected without a URL:\n%s", diff)
	}
}
