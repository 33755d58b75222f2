package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/server"
)

func TestParseSimNodes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []server.SimGroup
		err  string
	}{
		{in: "v100=4x8", want: []server.SimGroup{{GPUType: "v100", Nodes: 4, GPUsPerNode: 8}}},
		{in: "v100=2x8+4x4, k80=1x2", want: []server.SimGroup{
			{GPUType: "v100", Nodes: 2, GPUsPerNode: 8, More: []server.NodeSize{{Nodes: 4, GPUs: 4}}},
			{GPUType: "k80", Nodes: 1, GPUsPerNode: 2},
		}},
		{in: "v100=2x8+", err: `"": want NODESxGPUS`},
		{in: "v100=0x8", err: `"0x8": want NODESxGPUS with both at least 1`},
		{in: "v100=2x8+4x0", err: `"4x0"`},
		{in: "v100=2x8+x4", err: `"x4"`},
		{in: "=2x8", err: "want TYPE=NODESxGPUS"},
		{in: "v100", err: "want TYPE=NODESxGPUS"},
		{in: "v100=2x8,v100=1x4", err: "GPU type v100 given twice"},
		{in: "v100=70000x1", err: "at most 65536 nodes"},
		{in: "v100=40000x1+40000x1", err: "at most 65536 nodes"},
		{in: "v100=1x2048", err: "1024 GPUs a node"},
	} {
		got, err := parseSimNodes(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--sim-nodes") {
				t.Errorf("parseSimNodes(%q) = %v, %v; want an error naming --sim-nodes and containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseSimNodes(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParseSimNodes: any flag value is parsed or refused, never a panic,
// and what is accepted is within the limits.
func FuzzParseSimNodes(f *testing.F) {
	for _, s := range []string{"v100=4x8", "v100=2x8+4x4,k80=1x2", "a=1x1+", "=x", "a=99999999999999999999x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		groups, err := parseSimNodes(s)
		if err != nil {
			return
		}
		for _, g := range groups {
			nodes := g.Nodes
			sizes := append([]server.NodeSize{{Nodes: g.Nodes, GPUs: g.GPUsPerNode}}, g.More...)
			for _, m := range g.More {
				nodes += m.Nodes
			}
			for _, m := range sizes {
				if m.Nodes < 1 || m.GPUs < 1 || m.GPUs > maxSimGPUsPerNode {
					t.Fatalf("%q: accepted a group of %d x %d", s, m.Nodes, m.GPUs)
				}
			}
			if nodes > maxSimNodes || g.GPUType == "" {
				t.Fatalf("%q: accepted %d nodes of type %q", s, nodes, g.GPUType)
			}
		}
	})
}
