package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// --cluster mixes node sizes: the summary counts every group's GPUs and
// says the cluster's shape, in text and JSON; without it the shape is
// --nodes x --gpus-per-node.
func TestSimulateCluster(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		gpus    int
		cluster string
	}{
		{name: "mixed", args: []string{"--cluster", "2x8, 4x4"}, gpus: 32, cluster: "2x8,4x4"},
		{name: "one group", args: []string{"--cluster", "3x8"}, gpus: 24, cluster: "3x8"},
		{name: "nodes flags", args: []string{"--nodes", "3", "--gpus-per-node", "8"}, gpus: 24, cluster: "3x8"},
		{name: "default", gpus: 64, cluster: "16x4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"simulate", "-q", "--jobs", "20"}, tc.args...)
			stdout := mustRun(t, args...)
			for _, re := range []string{
				fmt.Sprintf(`(?m)^cluster\s+%d GPUs$`, tc.gpus),
				`(?m)^nodes\s+` + regexp.QuoteMeta(tc.cluster) + ` \(nodes x GPUs\)$`,
				`(?m)^jobs\s+20 \(20 completed\)$`,
			} {
				if !regexp.MustCompile(re).MatchString(stdout) {
					t.Errorf("summary does not match %s:\n%s", re, stdout)
				}
			}
			var got struct {
				GPUs      int    `json:"gpus"`
				Cluster   string `json:"cluster"`
				Completed int    `json:"completed"`
			}
			out := mustRun(t, append(args, "--json", "-")...)
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("parse --json -: %v\n%s", err, out)
			}
			if got.GPUs != tc.gpus || got.Cluster != tc.cluster || got.Completed != 20 {
				t.Errorf("JSON gpus %d, cluster %q, completed %d; want %d, %q, 20", got.GPUs, got.Cluster, got.Completed, tc.gpus, tc.cluster)
			}
		})
	}
}

// A bad --cluster, or one given with --nodes or --gpus-per-node, fails
// before simulating, naming the flag and why.
func TestSimulateClusterErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "empty", args: []string{"--cluster", ""}, want: []string{"--cluster", "no node groups"}},
		{name: "zero nodes", args: []string{"--cluster", "0x8"}, want: []string{`--cluster "0x8"`, "at least 1 node"}},
		{name: "zero GPUs", args: []string{"--cluster", "4x8,2x0"}, want: []string{"--cluster", "group 2x0", "at least 1 GPU"}},
		{name: "negative", args: []string{"--cluster", "-1x8"}, want: []string{"--cluster", `nodes "-1"`, "positive whole number"}},
		{name: "not a number", args: []string{"--cluster", "4xeight"}, want: []string{"--cluster", `GPUs per node "eight"`}},
		{name: "fraction", args: []string{"--cluster", "2.5x8"}, want: []string{"--cluster", `nodes "2.5"`}},
		{name: "no size", args: []string{"--cluster", "4"}, want: []string{"--cluster", `group "4"`, "NODESxGPUS"}},
		{name: "empty group", args: []string{"--cluster", "4x8,"}, want: []string{"--cluster", `group ""`}},
		{name: "too many nodes", args: []string{"--cluster", "60000x8,6000x8"}, want: []string{"--cluster", "more than 65536 nodes"}},
		{name: "too large a node", args: []string{"--cluster", "1x2048"}, want: []string{"--cluster", "2048 GPUs per node", "at most 1024"}},
		{name: "too many GPUs", args: []string{"--cluster", "2000x1024"}, want: []string{"--cluster", "more than 1048576 GPUs"}},
		{name: "with --nodes", args: []string{"--cluster", "4x8", "--nodes", "16"}, want: []string{"--cluster", "--nodes or --gpus-per-node"}},
		{name: "with --gpus-per-node", args: []string{"--gpus-per-node", "8", "--cluster", "4x8"}, want: []string{"--cluster", "--nodes or --gpus-per-node"}},
		{name: "too many --nodes", args: []string{"--nodes", "70000", "--gpus-per-node", "1"}, want: []string{"--nodes 70000", "more than 65536 nodes"}},
		{name: "too large --gpus-per-node", args: []string{"--gpus-per-node", "4096"}, want: []string{"--gpus-per-node 4096", "at most 1024"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"simulate", "-q", "--jobs", "5"}, tc.args...)
			stdout, _, err := run(t, args...)
			if err == nil {
				t.Fatalf("voda %s succeeded, want an error; stdout:\n%s", strings.Join(args, " "), stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSimulateHelpCluster(t *testing.T) {
	t.Parallel()
	stdout := mustRun(t, "simulate", "--help")
	for _, re := range []string{`(?m)^\s+--cluster string\s+nodes of several sizes`, `--cluster 4x8,8x4`, `Limits: 65536 nodes, 1024 GPUs`} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("simulate --help does not match %s:\n%s", re, stdout)
		}
	}
}
