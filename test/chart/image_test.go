package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestImage checks the image values: no Voda image is published, so a
// rendering that names none (the defaults) fails with a message saying
// how to build one and what to set, in every template; one that names an
// image renders it.
func TestImage(t *testing.T) {
	tag := appVersion(t)
	digest := "sha256:" + strings.Repeat("cd", 32)
	// What the refusal of a missing image must tell the user.
	howTo := []string{
		"image.repository is not set", "make image", "bin/image/layout", "bin/image/voda.tar",
		"docs/kubernetes.md#the-image", "crane push bin/image/layout registry.example.com/voda:" + tag,
		"image.repository=registry.example.com/voda", "image.tag=" + tag, "image.digest=sha256:",
	}
	for _, c := range []struct {
		name   string
		values map[string]any
		// only is the template rendered alone (--show-only), if any.
		only string
		// Either the messages of the refusal, or the image rendered.
		wantErr   []string
		wantImage string
	}{
		{name: "defaults", wantErr: howTo},
		{name: "defaults, the RBAC alone", only: "templates/rbac.yaml", wantErr: howTo},
		{name: "defaults, the user roles alone", only: "templates/user-roles.yaml", wantErr: howTo},
		{name: "a tag without a repository", values: map[string]any{"image": map[string]any{"tag": tag}}, wantErr: howTo},
		{name: "a digest without a repository", values: map[string]any{"image": map[string]any{"digest": digest}}, wantErr: howTo},
		{name: "a repository without a tag or digest", values: map[string]any{"image": map[string]any{"repository": ImageRepository}},
			wantErr: []string{"image.repository registry.example.com/voda needs image.tag or image.digest", "git describe --tags --always --dirty",
				tag + " on the commit tagged " + tag, "image.digest=sha256:", "docs/kubernetes.md#the-image"}},
		{name: "a tag in the repository", values: map[string]any{"image": map[string]any{"repository": ImageRepository + ":" + tag, "tag": tag}},
			wantErr: []string{"image.repository registry.example.com/voda:" + tag + " holds a tag or digest: give the repository alone"}},
		{name: "a digest in the repository", values: map[string]any{"image": map[string]any{"repository": ImageRepository + "@" + digest, "tag": tag}},
			wantErr: []string{"holds a tag or digest"}},
		{name: "repository and tag", values: map[string]any{"image": map[string]any{"repository": ImageRepository, "tag": tag}},
			wantImage: ImageRepository + ":" + tag},
		{name: "a registry with a port", values: map[string]any{"image": map[string]any{"repository": "registry.example.com:5000/team/voda", "tag": "12b162b"}},
			wantImage: "registry.example.com:5000/team/voda:12b162b"},
		{name: "repository and digest", values: map[string]any{"image": map[string]any{"repository": ImageRepository, "digest": digest}},
			wantImage: ImageRepository + "@" + digest},
		{name: "the digest wins over the tag", values: map[string]any{"image": map[string]any{"repository": ImageRepository, "tag": tag, "digest": digest}},
			wantImage: ImageRepository + "@" + digest},
	} {
		t.Run(c.name, func(t *testing.T) {
			only := c.only
			if only == "" {
				only = "templates/deployment.yaml"
			}
			out, err := Render(t.Context(), c.values, nil, "--show-only", only)
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("rendered, want a refusal:\n%s", out)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("refused with\n%v\nwant a message with %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(out)
			if err != nil || len(objs) != 1 {
				t.Fatalf("the Deployment: %d objects, %v", len(objs), err)
			}
			r := &rendered{t: t, objs: objs}
			wantField(t, r.container("voda"), c.wantImage, "image")
		})
	}
}

// TestDocsImageTag checks that the docs spell the image's tag one way:
// every version tag they give the image (voda:TAG, image.tag=TAG) is
// spelt as the chart's appVersion is (with or without the leading v), and
// the tag they push is the appVersion itself, as is ImageTag.
func TestDocsImageTag(t *testing.T) {
	tag := appVersion(t)
	if ImageTag != tag {
		t.Errorf("ImageTag %s, want the chart's appVersion %s", ImageTag, tag)
	}
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "..", "..", "..")
	version := regexp.MustCompile(`(voda:|image\.tag=)(v?[0-9]+\.[0-9]+\.[0-9]+)\b`)
	pushed := regexp.MustCompile(`(?:crane push|skopeo copy) \S+ (?:docker://)?registry\.example\.com/voda:(\S+)`)
	for _, f := range []string{"README.md", "docs/install.md", "docs/kubernetes.md", "deploy/helm/voda/README.md", "deploy/helm/voda/values.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range version.FindAllStringSubmatch(string(b), -1) {
			if strings.HasPrefix(m[2], "v") != strings.HasPrefix(tag, "v") {
				t.Errorf("%s: %s spells the tag unlike the chart's appVersion %s", f, m[0], tag)
			}
		}
		for _, m := range pushed.FindAllStringSubmatch(string(b), -1) {
			if m[1] != tag {
				t.Errorf("%s: %q pushes tag %s, want the chart's appVersion %s", f, m[0], m[1], tag)
			}
		}
	}
}
