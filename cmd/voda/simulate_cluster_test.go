package main

import (
	"encoding/json"
	"fmt"
	"regexp"
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

func TestSimulateHelpCluster(t *testing.T) {
	t.Parallel()
	stdout := mustRun(t, "simulate", "--help")
	for _, re := range []string{`(?m)^\s+--cluster string\s+nodes of several sizes`, `--cluster 4x8,8x4`, `Limits: 65536 nodes, 1024 GPUs`} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("simulate --help does not match %s:\n%s", re, stdout)
		}
	}
}
