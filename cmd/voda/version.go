package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and revision are stamped at link time by the image build
// (hack/image): -ldflags "-X main.version=v0.3.0 -X main.revision=<commit>".
// A plain `go build` leaves them empty and versionInfo falls back to what
// the Go toolchain recorded, if anything.
var (
	version  string
	revision string
)

// versionInfo returns the stamped version and revision, else the main
// module's version and the VCS revision from the build information, else
// "devel" and "unknown".
func versionInfo() (v, rev string) {
	v, rev = version, revision
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if rev == "" {
		rev = "unknown"
	}
	return v, rev
}

// versionLine is what `voda --version` and `voda version` print.
func versionLine() string {
	v, rev := versionInfo()
	return fmt.Sprintf("voda %s (revision %s, %s %s/%s)", v, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Voda's version, the commit it was built from, and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}
