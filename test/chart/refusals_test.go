package chart

import (
	"strings"
	"testing"
)

// TestRefusals renders combinations that cannot work: each must fail,
// with a message that says why (the templates' fail, or the schema).
func TestRefusals(t *testing.T) {
	mongo := map[string]any{"type": "mongodb", "mongodb": map[string]any{"existingSecret": "m"}}
	rabbit := map[string]any{"type": "rabbitmq", "rabbitmq": map[string]any{"existingSecret": "r"}}
	// Files written into a copy of the chart, over the chart's own.
	files := map[string]map[string]string{
		"PrometheusRule without alerts.yaml": {"files/alerts.yaml": ""},
		"PrometheusRule from no rule file":   {"files/alerts.yaml": "- alert: X\n"},
	}
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"embedded store with 2 replicas", map[string]any{"replicas": 2, "queue": rabbit},
			"store.type embedded keeps the state in a file one process owns: it needs components all and replicas 1 (got components all, replicas 2)"},
		{"embedded store split", map[string]any{"components": "split", "queue": rabbit, "scheduler": map[string]any{"gpuTypes": []string{"v100"}}},
			"store.type embedded keeps the state in a file one process owns"},
		{"memory queue with 3 replicas", map[string]any{"replicas": 3, "store": mongo},
			"queue.type memory reaches only its own process: with components all and 3 pods"},
		{"memory queue split", map[string]any{"components": "split", "store": mongo, "scheduler": map[string]any{"gpuTypes": []string{"v100"}}},
			"queue.type memory reaches only its own process: with components split"},
		{"mongodb without its Secret", map[string]any{"store": map[string]any{"type": "mongodb"}},
			"store.type mongodb needs store.mongodb.existingSecret"},
		{"rabbitmq without its Secret", map[string]any{"queue": map[string]any{"type": "rabbitmq"}},
			"queue.type rabbitmq needs queue.rabbitmq.existingSecret"},
		{"split without GPU types", map[string]any{"components": "split", "store": mongo, "queue": rabbit},
			"components split needs scheduler.gpuTypes"},
		{"two schedulers without leader election", map[string]any{"replicas": 2, "store": mongo, "queue": rabbit,
			"scheduler": map[string]any{"leaderElection": map[string]any{"enabled": false}}},
			"scheduler.leaderElection.enabled false with 2 scheduler pods"},
		{"token-file without its Secret", map[string]any{"authentication": map[string]any{"mode": "token-file"}},
			"authentication.mode token-file needs authentication.tokenFile.existingSecret"},
		{"no authentication", map[string]any{"authentication": map[string]any{"mode": "none"}},
			"authentication.mode none lets anyone who reaches the Service delete any job"},
		{"TLS without its Secret", map[string]any{"tls": map[string]any{"enabled": true}},
			"tls.enabled needs tls.secretName"},
		{"default namespace outside the job namespaces", map[string]any{"jobNamespaces": []string{"a"}, "defaultJobNamespace": "b"},
			"defaultJobNamespace b must be one of jobNamespaces (a)"},
		{"both PDB bounds", map[string]any{"podDisruptionBudget": map[string]any{"minAvailable": 1}},
			"podDisruptionBudget: give maxUnavailable or minAvailable, not both"},
		{"no ServiceAccount", map[string]any{"serviceAccount": map[string]any{"create": false}},
			"serviceAccount.create false needs serviceAccount.name"},
		{"probes on the API's port", map[string]any{"api": map[string]any{"probePort": 55587}},
			"api.probePort 55587 is api.port: give the probes a port of their own"},
		{"PrometheusRule without alerts.yaml", map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}},
			"metrics.prometheusRule.enabled needs the chart's files/alerts.yaml"},
		{"PrometheusRule from no rule file", map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}},
			"files/alerts.yaml is not a Prometheus rule file with a groups: list"},
		// The schema.
		{"unknown components", map[string]any{"components": "both"}, "components"},
		{"unknown store", map[string]any{"store": map[string]any{"type": "postgres"}}, "/store/type"},
		{"a team's unknown field", map[string]any{"teams": []any{map[string]any{"gpuType": "v100", "team": "a", "max": 3}}}, "/teams/0"},
		{"a team that is no namespace", map[string]any{"teams": []any{map[string]any{"gpuType": "v100", "team": "Team_A"}}}, "/teams/0/team"},
		{"a negative guarantee", map[string]any{"teams": []any{map[string]any{"gpuType": "v100", "team": "a", "guarantee": -1}}}, "/teams/0/guarantee"},
		{"a team without a GPU type", map[string]any{"teams": []any{map[string]any{"team": "a"}}}, "/teams/0"},
		{"unknown authentication", map[string]any{"authentication": map[string]any{"mode": "oidc"}}, "/authentication/mode"},
		{"unknown pod security level", map[string]any{"podSecurity": "strict"}, "podSecurity"},
		{"grace not a duration", map[string]any{"api": map[string]any{"firstRequestGrace": "1"}}, "/api/firstRequestGrace"},
		{"no job namespace", map[string]any{"jobNamespaces": []string{}}, "jobNamespaces"},
		{"a misspelt value", map[string]any{"replica": 2}, "replica"},
		{"a duration that is none", map[string]any{"scheduler": map[string]any{"leaderElection": map[string]any{"leaseDuration": "15"}}}, "leaseDuration"},
		{"a bad digest", map[string]any{"image": map[string]any{"repository": ImageRepository, "digest": "latest"}}, "/image/digest"},
		{"a bad tag", map[string]any{"image": map[string]any{"repository": ImageRepository, "tag": "v0.1.0:latest"}}, "/image/tag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each case names an image, so that what it tests is refused
			// rather than the missing image (TestImage).
			out, err := Render(t.Context(), WithImage(c.values), files[c.name])
			if err == nil {
				t.Fatalf("rendered, want a refusal with %q:\n%s", c.want, out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused with\n%v\nwant a message with %q", err, c.want)
			}
		})
	}
}
