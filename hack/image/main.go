// Command image builds Voda's container image without a container engine:
// it compiles a static voda binary and writes a one-layer image from
// scratch (the binary, CA certificates, /etc/passwd and /etc/group with the
// non-root user 65532, an empty /tmp) as an OCI image layout and as a
// docker-compatible tarball. The same commit gives the same digest: every
// file's time is the commit's time (or SOURCE_DATE_EPOCH), entries are
// sorted, owners and modes fixed, the binary has no build paths, and the
// image's created time is that same time.
//
// Usage (`make image` runs the first):
//
//	cd hack/image && go run . --out ../../bin/image        # linux/amd64
//	cd hack/image && go run . --out ../../bin/image --platform linux/arm64
//
// It lives in its own module so that go-containerregistry stays out of
// Voda's go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	var epoch int64
	flag.StringVar(&o.out, "out", "bin/image", "directory to write layout/ (OCI image layout) and voda.tar (docker tarball) into")
	flag.StringVar(&o.root, "root", "", "the Voda repository to build (default: the git work tree around the current directory)")
	flag.StringVar(&o.platform, "platform", "linux/amd64", "OS/ARCH of the image: linux/amd64 or linux/arm64")
	flag.StringVar(&o.binary, "binary", "", "a static voda binary built for --platform to use instead of building one (it must carry --version and --revision)")
	flag.StringVar(&o.version, "version", "", "the version to stamp and label (default: git describe --tags --always --dirty)")
	flag.StringVar(&o.revision, "revision", "", "the commit to stamp and label (default: git rev-parse HEAD)")
	flag.Int64Var(&epoch, "epoch", -1, "Unix time of every file and of the image's creation (default: $SOURCE_DATE_EPOCH, else the last commit's time)")
	flag.StringVar(&o.caFile, "ca-certificates", defaultCAFile, "the CA bundle to copy to "+caPath+" (Debian's ca-certificates package)")
	flag.StringVar(&o.repository, "repository", "voda", "the repository name the docker tarball tags the image with (REPOSITORY:VERSION)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if err := o.fill(ctx, epoch); err != nil {
		return err
	}
	start := time.Now()
	r, err := build(ctx, o)
	if err != nil {
		return err
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(o.root, p); err == nil && filepath.IsLocal(r) {
			return r
		}
		return p
	}
	fmt.Printf("voda %s (%s) %s, created %s, built in %v\n", o.version, o.revision, o.platform,
		o.epoch.UTC().Format(time.RFC3339), time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("  digest        %s\n", r.Digest)
	fmt.Printf("  size          %s compressed (layer %s), %s uncompressed\n", mib(r.CompressedSize), mib(r.LayerSize), mib(r.UncompressedSize))
	fmt.Printf("  OCI layout    %s\n", rel(r.Layout))
	fmt.Printf("  docker tar    %s (%s)\n", rel(r.Tarball), r.Tag)
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
