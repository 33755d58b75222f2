package server

import (
	"slices"
	"testing"
)

// TestJobNamespaces checks which namespaces the API lets manifests name:
// on Kubernetes only those the schedulers watch, so a job cannot land
// where Voda has no permissions and would never see it.
func TestJobNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"simulated: any", Config{Cluster: ClusterSim, Kube: KubeOptions{Namespace: "team-a"}}, nil},
		{"kubernetes: --namespace", Config{Cluster: ClusterKubernetes, Kube: KubeOptions{Namespace: "team-a"}}, []string{"team-a"}},
		{"kubernetes: default namespace", Config{Cluster: ClusterKubernetes}, []string{"default"}},
		{"kubernetes: --job-namespaces", Config{Cluster: ClusterKubernetes,
			Kube: KubeOptions{Namespace: "team-a", JobNamespaces: []string{"team-a", "team-b"}}}, []string{"team-a", "team-b"}},
	} {
		if got := tc.cfg.jobNamespaces(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: jobNamespaces() = %q, want %q", tc.name, got, tc.want)
		}
	}
}
