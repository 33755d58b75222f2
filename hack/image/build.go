package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// defaultCAFile is where Debian's ca-certificates package puts the
	// bundle (update-ca-certificates builds it from Mozilla's list).
	defaultCAFile = "/etc/ssl/certs/ca-certificates.crt"
	// caPath is where the image has it: the first place Go's crypto/x509
	// looks on Linux.
	caPath = "etc/ssl/certs/ca-certificates.crt"
	// nonroot is the user and group the image runs as (distroless's).
	nonroot = 65532
	// apiPort is voda server's API port (api.DefaultServerAddr); probePort
	// the probe listener's port the Helm chart gives --probe-addr
	// (api.probePort in its values).
	apiPort   = "55587/tcp"
	probePort = "55588/tcp"
	// source is the repository the image's labels point to.
	source = "https://github.com/vodascheduler/voda"
)

// options are one build's inputs; fill completes them.
type options struct {
	root       string
	out        string
	platform   string
	binary     string
	version    string
	revision   string
	epoch      time.Time
	caFile     string
	repository string
}

// fill finds the repository and, where not given, the version, revision
// and time from git (the time from SOURCE_DATE_EPOCH first). epoch < 0
// means not given.
func (o *options) fill(ctx context.Context, epoch int64) error {
	var err error
	if o.root == "" {
		if o.root, err = git(ctx, "", "rev-parse", "--show-toplevel"); err != nil {
			return err
		}
	}
	if o.root, err = filepath.Abs(o.root); err != nil {
		return err
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		return err
	}
	if o.version == "" {
		if o.version, err = git(ctx, o.root, "describe", "--tags", "--always", "--dirty"); err != nil {
			return err
		}
	}
	if o.revision == "" {
		if o.revision, err = git(ctx, o.root, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	if epoch < 0 {
		s := os.Getenv("SOURCE_DATE_EPOCH")
		if s == "" {
			if s, err = git(ctx, o.root, "log", "-1", "--format=%ct"); err != nil {
				return err
			}
		}
		if epoch, err = strconv.ParseInt(s, 10, 64); err != nil || epoch < 0 {
			return fmt.Errorf("epoch %q: want seconds since 1970", s)
		}
	}
	o.epoch = time.Unix(epoch, 0).UTC()
	return nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// goarch returns the GOARCH of a linux/ARCH platform.
func goarch(platform string) (string, error) {
	switch platform {
	case "linux/amd64", "linux/arm64":
		return strings.TrimPrefix(platform, "linux/"), nil
	}
	return "", fmt.Errorf("platform %q: want linux/amd64 or linux/arm64", platform)
}

// buildBinary compiles cmd/voda in root into out: static, without build
// paths, symbol tables or VCS data, the version and revision stamped.
func buildBinary(ctx context.Context, root, platform, version, revision, out string) error {
	arch, err := goarch(platform)
	if err != nil {
		return err
	}
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.revision=%s", version, revision)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/voda")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/voda for %s: %w\n%s", platform, err, b)
	}
	return nil
}

// file is one entry of the image's layer.
type file struct {
	name     string // relative, directories ending in "/"
	mode     int64
	uid, gid int
	data     []byte
}

const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const group = `root:x:0:
nobody:x:65534:
nonroot:x:65532:
`

// files is the image's file system, sorted by name.
func files(binary, ca []byte) []file {
	fs := []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: caPath, mode: 0o644, data: ca},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonroot, gid: nonroot},
		{name: "tmp/", mode: 0o1777},
		{name: "voda", mode: 0o755, data: binary},
	}
	slices.SortFunc(fs, func(a, b file) int { return strings.Compare(a.name, b.name) })
	return fs
}

// layerTar writes fs as a tar stream with every time set to mtime and no
// user or group names: the same files give the same bytes.
func layerTar(fs []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range fs {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: mtime, Format: tar.FormatPAX}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// labels are the image's OCI annotations, as config labels and on the
// manifest.
func labels(o options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "voda",
		"org.opencontainers.image.description": "Voda, a GPU scheduler for elastic deep-learning training on Kubernetes",
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.url":         source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.created":     o.epoch.Format(time.RFC3339),
	}
}

// image assembles the image from the layer's tar.
func image(o options, layerBytes []byte) (v1.Image, error) {
	arch, err := goarch(o.platform)
	if err != nil {
		return nil, err
	}
	// Compressed once here: given the uncompressed tar, the layer would
	// compress it again for every digest, size and copy it is asked for.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(layerBytes); err != nil {
		return nil, fmt.Errorf("gzip layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	created := v1.Time{Time: o.epoch}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "hack/image " + o.version, Comment: "voda, CA certificates, passwd, group, /tmp"},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, created
	l := labels(o)
	cf.Config = v1.Config{
		Entrypoint:   []string{"/voda"},
		User:         fmt.Sprintf("%d:%d", nonroot, nonroot),
		WorkingDir:   "/home/nonroot",
		Env:          []string{"PATH=/"},
		ExposedPorts: map[string]struct{}{apiPort: {}, probePort: {}},
		Labels:       l,
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return mutate.Annotations(img, l).(v1.Image), nil
}

// result is what build wrote.
type result struct {
	Digest           v1.Hash
	Layout, Tarball  string
	Tag              string
	LayerSize        int64 // the compressed layer
	CompressedSize   int64 // layer, config and manifest: what a registry stores
	UncompressedSize int64 // the layer's tar
}

// build builds (unless o.binary is set) the binary and writes the image
// as o.out/layout and o.out/voda.tar, replacing what was there.
func build(ctx context.Context, o options) (result, error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return result{}, err
	}
	bin := o.binary
	if bin == "" {
		tmp, err := os.MkdirTemp(o.out, ".build-")
		if err != nil {
			return result{}, err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "voda")
		if err := buildBinary(ctx, o.root, o.platform, o.version, o.revision, bin); err != nil {
			return result{}, err
		}
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return result{}, err
	}
	ca, err := os.ReadFile(o.caFile)
	if err != nil {
		return result{}, fmt.Errorf("CA certificates (Debian's ca-certificates package): %w", err)
	}
	layerBytes, err := layerTar(files(binary, ca), o.epoch)
	if err != nil {
		return result{}, err
	}
	img, err := image(o, layerBytes)
	if err != nil {
		return result{}, err
	}
	r := result{UncompressedSize: int64(len(layerBytes))}
	if r.Digest, err = img.Digest(); err != nil {
		return result{}, err
	}
	if r.CompressedSize, r.LayerSize, err = sizes(img); err != nil {
		return result{}, err
	}

	r.Layout = filepath.Join(o.out, "layout")
	if err := os.RemoveAll(r.Layout); err != nil {
		return result{}, err
	}
	p, err := layout.Write(r.Layout, empty.Index)
	if err != nil {
		return result{}, fmt.Errorf("OCI layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.version})); err != nil {
		return result{}, fmt.Errorf("OCI layout: %w", err)
	}

	tag, err := name.NewTag(o.repository + ":" + o.version)
	if err != nil {
		return result{}, fmt.Errorf("docker tarball tag: %w", err)
	}
	r.Tag = tag.String()
	r.Tarball = filepath.Join(o.out, "voda.tar")
	if err := tarball.WriteToFile(r.Tarball, tag, img); err != nil {
		return result{}, fmt.Errorf("docker tarball: %w", err)
	}
	return r, nil
}

// sizes returns what a registry stores for img (manifest, config and
// layers) and the compressed layers alone.
func sizes(img v1.Image) (total, layers int64, err error) {
	m, err := img.RawManifest()
	if err != nil {
		return 0, 0, err
	}
	c, err := img.RawConfigFile()
	if err != nil {
		return 0, 0, err
	}
	ls, err := img.Layers()
	if err != nil {
		return 0, 0, err
	}
	for _, l := range ls {
		n, err := l.Size()
		if err != nil {
			return 0, 0, err
		}
		layers += n
	}
	return int64(len(m)+len(c)) + layers, layers, nil
}
