package kube

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/test/vodatest"
)

// imageBinary builds the image into a temporary directory as `make image`
// does and returns the path of the voda it holds, taken from the OCI
// layout by hand (index.json, the manifest, its one gzipped tar layer),
// and the image's digest (its manifest's, as make image prints it).
// The packages are compiled already when vodatest.Binary built its binary
// with the same flags, so the build mostly links.
func imageBinary(t *testing.T) (bin, digest string) {
	t.Helper()
	vodatest.Binary(t)
	out := t.TempDir()
	start := time.Now()
	cmd := exec.Command("go", "run", ".", "--out", out)
	cmd.Dir = filepath.Join("..", "..", "hack", "image")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/image: %v\n%s", err, b)
	}
	t.Logf("image built in %v:\n%s", time.Since(start).Round(100*time.Millisecond), b)

	layout := filepath.Join(out, "layout")
	var index, manifest struct {
		Manifests []struct{ Digest string } `json:"manifests"`
		Layers    []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"layers"`
	}
	readJSON(t, filepath.Join(layout, "index.json"), &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1", len(index.Manifests))
	}
	readJSON(t, blob(layout, index.Manifests[0].Digest), &manifest)
	if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("manifest layers %+v, want one gzipped tar", manifest.Layers)
	}
	bin = filepath.Join(t.TempDir(), "voda")
	if err := extractFile(blob(layout, manifest.Layers[0].Digest), "voda", bin); err != nil {
		t.Fatal(err)
	}
	return bin, index.Manifests[0].Digest
}

func blob(layout, digest string) string {
	return filepath.Join(layout, "blobs", strings.Replace(digest, ":", string(filepath.Separator), 1))
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// extractFile writes the regular file name of the gzipped tar layer to
// dst, executable.
func extractFile(layer, name, dst string) error {
	f, err := os.Open(layer)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("layer %s: %w", layer, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("layer %s has no %s", layer, name)
		}
		if err != nil {
			return fmt.Errorf("layer %s: %w", layer, err)
		}
		if h.Name != name || h.Typeflag != tar.TypeReg {
			continue
		}
		w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, tr); err != nil {
			w.Close()
			return fmt.Errorf("extract %s: %w", name, err)
		}
		return w.Close()
	}
}
