// Package chart renders Voda's Helm chart (deploy/helm/voda) with the helm
// binary hack/tools.sh builds, for the chart's tests here and the
// server-side dry-run of its objects in test/kube. ValueSets are the value
// sets both test.
package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/kube/kubetest"
)

// Release and Namespace are the release's name and namespace every
// rendering uses: those of deploy/rbac.yaml.
const (
	Release   = "voda"
	Namespace = "voda-system"
)

// Dir returns the chart's folder.
func Dir() (string, error) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "helm", "voda"), nil
}

// ValueSet is one way to install the chart.
type ValueSet struct {
	Name   string
	Values map[string]any
	// Files are written into a copy of the chart before rendering (path
	// relative to the chart: the monitoring files another change adds).
	Files map[string]string
	// Namespaces are the namespaces the objects need besides Namespace.
	Namespaces []string
}

// TestDashboard is a minimal Grafana dashboard for value sets that turn
// the dashboards on, so the templates are tested whether or not the
// chart's own dashboards exist yet.
const TestDashboard = `{"title": "Voda chart test", "uid": "voda-chart-test", "panels": []}`

// TestAlerts is a Prometheus rule file used when the chart has no
// files/alerts.yaml yet.
const TestAlerts = `groups:
- name: voda-chart-test
  rules:
  - alert: VodaChartTestDown
    expr: up{job="voda"} == 0
    for: 5m
    labels:
      severity: warning
    annotations:
      summary: Voda is not scraped
`

// ImageRepository and ImageTag name the image every value set installs:
// the chart has no default image (none is published), so each rendering
// names one, as an installation must. The tag is the chart's appVersion,
// the one the docs push.
const (
	ImageRepository = "registry.example.com/voda"
	ImageTag        = "v0.1.0"
)

// Image returns the image values of ImageRepository and ImageTag, a new
// map for each caller to change.
func Image() map[string]any {
	return map[string]any{"repository": ImageRepository, "tag": ImageTag}
}

// WithImage returns values with Image() set as "image" unless they name
// an image already, leaving values unchanged.
func WithImage(values map[string]any) map[string]any {
	if _, ok := values["image"]; ok {
		return values
	}
	out := maps.Clone(values)
	if out == nil {
		out = map[string]any{}
	}
	out["image"] = Image()
	return out
}

// ValueSets returns the value sets the tests render and dry-run; each
// names the image of Image() unless it sets its own.
func ValueSets() []ValueSet {
	monitoringFiles := map[string]string{"files/dashboards/chart-test.json": TestDashboard}
	if dir, err := Dir(); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "files", "alerts.yaml")); err != nil {
			monitoringFiles["files/alerts.yaml"] = TestAlerts
		}
	}
	sets := []ValueSet{
		{Name: "defaults", Namespaces: []string{"default"}},
		{
			Name: "mongodb-rabbitmq-3-replicas",
			Values: map[string]any{
				"replicas": 3,
				"store":    map[string]any{"type": "mongodb", "mongodb": map[string]any{"existingSecret": "voda-mongodb"}},
				"queue":    map[string]any{"type": "rabbitmq", "rabbitmq": map[string]any{"existingSecret": "voda-rabbitmq", "key": "amqp-url"}},
				"scheduler": map[string]any{
					"gpuTypes":       []string{"nvidia-tesla-v100", "nvidia-a100"},
					"leaderElection": map[string]any{"leaseDuration": "20s", "renewDeadline": "15s", "retryPeriod": "3s"},
				},
				"podDisruptionBudget": map[string]any{"maxUnavailable": nil, "minAvailable": 2},
				// No probes' port: the probes go to the API's.
				"api": map[string]any{"probePort": 0},
			},
			Namespaces: []string{"default"},
		},
		{
			Name: "split-mongodb-rabbitmq",
			Values: map[string]any{
				"components": "split",
				"api":        map[string]any{"replicas": 3},
				"scheduler": map[string]any{"replicas": 2, "gpuTypes": []string{"v100"},
					"retention": map[string]any{"finishedRetention": "168h", "maxFinishedJobs": 2000000}},
				"store": map[string]any{"type": "mongodb", "mongodb": map[string]any{"existingSecret": "voda-mongodb"}},
				"queue": map[string]any{"type": "rabbitmq", "rabbitmq": map[string]any{"existingSecret": "voda-rabbitmq"}},
				"teams": []any{
					map[string]any{"gpuType": "v100", "team": "team-a", "guarantee": 8, "limit": 16, "weight": 1},
					map[string]any{"gpuType": "v100", "team": "team-b", "guarantee": 8},
				},
			},
			Namespaces: []string{"default"},
		},
		{
			Name: "token-file-tls",
			Values: map[string]any{
				"authentication": map[string]any{"mode": "token-file", "tokenFile": map[string]any{"existingSecret": "voda-tokens", "adminsGroup": "ops"}},
				"tls":            map[string]any{"enabled": true, "secretName": "voda-tls"},
				"podSecurity":    "restricted",
				"nodeSelector":   map[string]any{"node-role.kubernetes.io/control-plane": ""},
				"tolerations":    []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}},
				"image":          map[string]any{"repository": ImageRepository, "digest": "sha256:" + strings.Repeat("ab", 32), "pullPolicy": "Always"},
				"store":          map[string]any{"embedded": map[string]any{"persistence": map[string]any{"storageClass": "fast", "size": "5Gi"}}},
				// One probe on the API's port, which serves HTTPS; the
				// others stay on the probes' port, plain HTTP.
				"startupProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "http"}, "periodSeconds": 2, "failureThreshold": 60},
			},
			Namespaces: []string{"default"},
		},
		{
			Name: "monitoring",
			Values: map[string]any{
				"metrics": map[string]any{
					"perJobMetrics":  false,
					"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
					"prometheusRule": map[string]any{"enabled": true},
					"dashboards":     map[string]any{"enabled": true},
				},
			},
			Files:      monitoringFiles,
			Namespaces: []string{"default"},
		},
		{
			Name: "job-namespaces",
			Values: map[string]any{
				"jobNamespaces":       []string{"team-a", "team-b", "team-c"},
				"defaultJobNamespace": "team-b",
				"progressURL":         "https://voda.example.com",
				"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
					"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/os", "operator": "In", "values": []string{"linux"}}}}},
				}}},
			},
			Namespaces: []string{"team-a", "team-b", "team-c"},
		},
	}
	for i := range sets {
		sets[i].Values = WithImage(sets[i].Values)
	}
	return sets
}

// Render runs helm template on the chart (or on a copy holding files
// besides) with values, and returns its output; args are more helm
// template arguments (--show-only ...). An error carries helm's message.
func Render(ctx context.Context, values map[string]any, files map[string]string, args ...string) ([]byte, error) {
	helm, err := kubetest.ToolPath("helm")
	if err != nil {
		return nil, err
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "voda-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if len(files) > 0 {
		if err := copyDir(dir, filepath.Join(tmp, "voda")); err != nil {
			return nil, err
		}
		dir = filepath.Join(tmp, "voda")
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				return nil, err
			}
		}
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	vf := filepath.Join(tmp, "values.yaml")
	if err := os.WriteFile(vf, b, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, helm, append([]string{"template", Release, dir, "--namespace", Namespace, "--values", vf}, args...)...)
	// helm reads no configuration of the machine it runs on.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+tmp, "HELM_CONFIG_HOME="+tmp, "HELM_DATA_HOME="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Decode splits a rendering into its objects.
func Decode(manifest []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
