package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plainValues render the chart as the plain manifests deploy/rbac.yaml and
// deploy/roles.yaml: release voda in voda-system, jobs in default,
// --authentication kubernetes. The image is not in them, but every
// template refuses to render without one.
var plainValues = map[string]any{"plainManifests": true, "image": Image()}

// TestDeployManifests checks that deploy/rbac.yaml and deploy/roles.yaml
// are the chart's rendering of its RBAC, the one source of truth; -update
// rewrites them.
func TestDeployManifests(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	deploy := filepath.Join(dir, "..", "..")
	for _, m := range []struct{ file, template string }{
		{"rbac.yaml", "templates/rbac.yaml"},
		{"roles.yaml", "templates/user-roles.yaml"},
	} {
		t.Run(m.file, func(t *testing.T) {
			out, err := Render(t.Context(), plainValues, nil, "--show-only", m.template)
			if err != nil {
				t.Fatal(err)
			}
			want := plainManifest(out, m.template)
			path := filepath.Join(deploy, m.file)
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("deploy/%s is not the chart's %s: run %s\n--- want\n%s", m.file, m.template, updateHint, want)
			}
			objs, err := Decode(want)
			if err != nil || len(objs) == 0 {
				t.Fatalf("deploy/%s: %d objects, %v", m.file, len(objs), err)
			}
		})
	}
}

// plainManifest turns helm's output of one template into the file:
// without helm's "# Source:" lines and leading "---", under a header
// saying where it comes from.
func plainManifest(out []byte, template string) []byte {
	s := strings.TrimPrefix(string(out), "---\n")
	s = strings.ReplaceAll(s, "# Source: voda/"+template+"\n", "")
	return []byte("# Generated from deploy/helm/voda/" + template + " by\n" +
		"# `" + updateHint + "`: edit the chart, not this file.\n" + s)
}
