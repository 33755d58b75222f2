package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The tests build the real binary once, for the machine's architecture
// when it is one of the image's, stamped with a fixed version, revision
// and time.
var (
	binOnce sync.Once
	binPath string
	binErr  error
	binTime time.Duration
)

func testOptions(t *testing.T) options {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	platform := "linux/" + runtime.GOARCH
	if _, err := goarch(platform); err != nil {
		t.Skipf("no image for %s", platform)
	}
	return options{
		root:       root,
		platform:   platform,
		version:    "v0.0.0-test",
		revision:   "0123456789abcdef0123456789abcdef01234567",
		epoch:      time.Unix(1700000000, 0).UTC(),
		caFile:     defaultCAFile,
		repository: "voda",
	}
}

// testBinary builds the binary of testOptions once into a directory the
// package's tests share.
func testBinary(t *testing.T) string {
	t.Helper()
	o := testOptions(t)
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "voda-image-test")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "voda")
		start := time.Now()
		binErr = buildBinary(context.Background(), o.root, o.platform, o.version, o.revision, binPath)
		binTime = time.Since(start)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// TestReproducible builds the image twice from one binary into two
// directories: same digest, same OCI layout, same docker tarball.
func TestReproducible(t *testing.T) {
	o := testOptions(t)
	o.binary = testBinary(t)
	t.Logf("binary built in %v", binTime.Round(100*time.Millisecond))
	var rs [2]result
	for i := range rs {
		o.out = t.TempDir()
		start := time.Now()
		r, err := build(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
		t.Logf("build %d: %s in %v: %s compressed (layer %s), %s uncompressed", i+1, r.Digest,
			time.Since(start).Round(time.Millisecond), mib(r.CompressedSize), mib(r.LayerSize), mib(r.UncompressedSize))
	}
	if rs[0].Digest != rs[1].Digest {
		t.Errorf("digests differ: %s and %s", rs[0].Digest, rs[1].Digest)
	}
	for _, rel := range []string{"layout/index.json", "layout/oci-layout", "voda.tar"} {
		a, errA := os.ReadFile(filepath.Join(filepath.Dir(rs[0].Layout), rel))
		b, errB := os.ReadFile(filepath.Join(filepath.Dir(rs[1].Layout), rel))
		if err := errors.Join(errA, errB); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the two builds", rel)
		}
	}
}

// TestBinaryReproducible builds the binary a second time: byte for byte
// the first, with no path of this machine in it, static and trimmed.
func TestBinaryReproducible(t *testing.T) {
	o := testOptions(t)
	first := testBinary(t)
	second := filepath.Join(t.TempDir(), "voda")
	start := time.Now()
	if err := buildBinary(t.Context(), o.root, o.platform, o.version, o.revision, second); err != nil {
		t.Fatal(err)
	}
	t.Logf("second binary build: %v", time.Since(start).Round(100*time.Millisecond))
	a, errA := os.ReadFile(first)
	b, errB := os.ReadFile(second)
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	t.Logf("binary: %s", mib(int64(len(a))))
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of the binary differ (%d and %d bytes)", len(a), len(b))
	}
	goenv, err := exec.Command("go", "env", "GOROOT", "GOPATH", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	for _, p := range append(strings.Fields(string(goenv)), o.root) {
		if p != "/" && bytes.Contains(a, []byte(p)) {
			t.Errorf("the binary contains the build path %s", p)
		}
	}
	info, err := buildinfo.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	want := map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux", "GOARCH": runtime.GOARCH}
	for k, v := range want {
		if settings[k] != v {
			t.Errorf("build setting %s = %q, want %q", k, settings[k], v)
		}
	}
	if v, ok := settings["vcs.revision"]; ok {
		t.Errorf("the binary carries VCS data (vcs.revision=%s)", v)
	}
}

// TestImage reads the image back from the OCI layout and the docker
// tarball and checks its configuration, its files and that its voda runs.
func TestImage(t *testing.T) {
	o := testOptions(t)
	o.binary = testBinary(t)
	o.out = t.TempDir()
	r, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(r.Layout)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != r.Digest {
		t.Fatalf("layout index lists %+v, want the one image %s", m.Manifests, r.Digest)
	}
	if got := m.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != o.version {
		t.Errorf("layout ref.name %q, want %q", got, o.version)
	}
	img, err := idx.Image(r.Digest)
	if err != nil {
		t.Fatal(err)
	}
	fromTar, err := tarball.ImageFromPath(r.Tarball, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := fromTar.ConfigName(); err != nil {
		t.Fatal(err)
	} else if want, _ := img.ConfigName(); d != want {
		t.Errorf("docker tarball's config %s, the layout's %s", d, want)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Equal(o.epoch) {
		t.Errorf("config os %s, architecture %s, created %v; want linux, %s, %v", cf.OS, cf.Architecture, cf.Created, runtime.GOARCH, o.epoch)
	}
	wantConfig := v1.Config{
		Entrypoint:   []string{"/voda"},
		User:         "65532:65532",
		WorkingDir:   "/home/nonroot",
		Env:          []string{"PATH=/"},
		ExposedPorts: map[string]struct{}{"55587/tcp": {}, "55588/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "voda",
			"org.opencontainers.image.description": "Voda, a GPU scheduler for elastic deep-learning training on Kubernetes",
			"org.opencontainers.image.source":      "https://github.com/vodascheduler/voda",
			"org.opencontainers.image.url":         "https://github.com/vodascheduler/voda",
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.version":     o.version,
			"org.opencontainers.image.revision":    o.revision,
			"org.opencontainers.image.created":     "2023-11-14T22:13:20Z",
		},
	}
	if diff := cmp.Diff(wantConfig, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	dir := t.TempDir()
	headers := extract(t, layers[0], dir)
	binary, err := os.ReadFile(o.binary)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(defaultCAFile)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
		data     []byte
	}{
		{"etc/", tar.TypeDir, 0o755, 0, 0, nil},
		{"etc/group", tar.TypeReg, 0o644, 0, 0, []byte(group)},
		{"etc/passwd", tar.TypeReg, 0o644, 0, 0, []byte(passwd)},
		{"etc/ssl/", tar.TypeDir, 0o755, 0, 0, nil},
		{"etc/ssl/certs/", tar.TypeDir, 0o755, 0, 0, nil},
		{"etc/ssl/certs/ca-certificates.crt", tar.TypeReg, 0o644, 0, 0, ca},
		{"home/", tar.TypeDir, 0o755, 0, 0, nil},
		{"home/nonroot/", tar.TypeDir, 0o700, 65532, 65532, nil},
		{"tmp/", tar.TypeDir, 0o1777, 0, 0, nil},
		{"voda", tar.TypeReg, 0o755, 0, 0, binary},
	}
	if len(headers) != len(want) {
		t.Errorf("%d entries, want %d", len(headers), len(want))
	}
	for i, w := range want {
		if i >= len(headers) {
			break
		}
		h := headers[i]
		if h.Name != w.name || h.Typeflag != w.typ || h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.gid || !h.ModTime.Equal(o.epoch) {
			t.Errorf("entry %d: %s type %c mode %o %d:%d %v, want %s type %c mode %o %d:%d %v",
				i, h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime, w.name, w.typ, w.mode, w.uid, w.gid, o.epoch)
		}
		if w.typ == tar.TypeReg {
			got, err := os.ReadFile(filepath.Join(dir, w.name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, w.data) {
				t.Errorf("%s: %d bytes, not the %d expected", w.name, len(got), len(w.data))
			}
		}
	}
	if !strings.Contains(passwd, "nonroot:x:65532:65532:") || !strings.Contains(group, "nonroot:x:65532:") {
		t.Errorf("passwd or group lacks user 65532:\n%s%s", passwd, group)
	}

	// The image's binary runs and reports the stamped version.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "Usage:\n  voda [command]"},
		{[]string{"version"}, fmt.Sprintf("voda %s (revision %s, %s linux/%s)", o.version, o.revision, runtime.Version(), runtime.GOARCH)},
		{[]string{"--version"}, fmt.Sprintf("voda %s (revision %s,", o.version, o.revision)},
	} {
		out, err := exec.Command(filepath.Join(dir, "voda"), c.args...).CombinedOutput()
		if err != nil {
			t.Errorf("voda %s: %v\n%s", strings.Join(c.args, " "), err, out)
		} else if !strings.Contains(string(out), c.want) {
			t.Errorf("voda %s printed:\n%s\nwant it to contain %q", strings.Join(c.args, " "), out, c.want)
		}
	}
}

// extract writes the layer's regular files and directories under dir and
// returns its headers in order; it refuses any other entry type and any
// name leaving dir.
func extract(t *testing.T, l v1.Layer, dir string) []*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var hs []*tar.Header
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs
		}
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		p := filepath.Join(dir, h.Name)
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, os.FileMode(h.Mode).Perm())
			}
		default:
			t.Fatalf("entry %q of type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
