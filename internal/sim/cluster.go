package sim

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// NodeGroup is Nodes nodes of GPUs GPUs each: one size of node in a
// simulated cluster.
type NodeGroup struct {
	Nodes int
	GPUs  int
}

// Limits of a simulated cluster. MaxGPUs is the most GPUs the algorithms
// take in one snapshot (a larger cluster fails its first cycle);
// MaxNodes and MaxGPUsPerNode keep a mistyped flag from building millions
// of nodes before that: 65,536 nodes of 16 GPUs reach MaxGPUs.
const (
	MaxNodes       = 1 << 16
	MaxGPUsPerNode = 1 << 10
	MaxGPUs        = 1 << 20
)

// CheckNodeGroups reports the first group with no node or no GPU, or a
// node larger than MaxGPUsPerNode, and a cluster past MaxNodes or
// MaxGPUs, naming the group as NODESxGPUS.
func CheckNodeGroups(groups []NodeGroup) error {
	if len(groups) == 0 {
		return errors.New("no node groups")
	}
	nodes, gpus := 0, 0
	for _, g := range groups {
		switch {
		case g.Nodes < 1:
			return fmt.Errorf("group %s: want at least 1 node, got %d", g, g.Nodes)
		case g.GPUs < 1:
			return fmt.Errorf("group %s: want at least 1 GPU per node, got %d", g, g.GPUs)
		case g.GPUs > MaxGPUsPerNode:
			return fmt.Errorf("group %s: %d GPUs per node, want at most %d", g, g.GPUs, MaxGPUsPerNode)
		case g.Nodes > MaxNodes-nodes:
			return fmt.Errorf("group %s: more than %d nodes in all", g, MaxNodes)
		}
		// Both factors are bounded above, so the product cannot overflow.
		nodes += g.Nodes
		gpus += g.Nodes * g.GPUs
		if gpus > MaxGPUs {
			return fmt.Errorf("group %s: more than %d GPUs in all", g, MaxGPUs)
		}
	}
	return nil
}

// String writes the group as --cluster reads it: NODESxGPUS.
func (g NodeGroup) String() string { return fmt.Sprintf("%dx%d", g.Nodes, g.GPUs) }

// FormatNodeGroups writes groups as ParseNodeGroups reads them, in their
// order: "4x8,8x4".
func FormatNodeGroups(groups []NodeGroup) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// ParseNodeGroups reads a cluster of nodes of several sizes: groups
// NODESxGPUS separated by commas, such as "4x8,8x4" (four nodes of 8
// GPUs and eight of 4), each a positive whole number of nodes and of
// GPUs, within the limits CheckNodeGroups applies. Spaces around a group
// or a number are allowed; an empty group is not.
func ParseNodeGroups(s string) ([]NodeGroup, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no node groups: want NODESxGPUS[,NODESxGPUS...], e.g. 4x8,8x4")
	}
	var groups []NodeGroup
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		ns, gs, ok := strings.Cut(strings.ToLower(part), "x")
		if !ok {
			return nil, fmt.Errorf("group %q: want NODESxGPUS, e.g. 4x8", part)
		}
		n, err := groupNumber(part, "nodes", ns)
		if err != nil {
			return nil, err
		}
		g, err := groupNumber(part, "GPUs per node", gs)
		if err != nil {
			return nil, err
		}
		groups = append(groups, NodeGroup{Nodes: n, GPUs: g})
	}
	if err := CheckNodeGroups(groups); err != nil {
		return nil, err
	}
	return groups, nil
}

// groupNumber reads the count what of the group part: digits only, so
// that a sign, a fraction or an exponent is an error rather than a guess.
// Zero passes here; CheckNodeGroups says why it is wrong.
func groupNumber(part, what, s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("group %q: %s %q is not a positive whole number", part, what, s)
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		// Digits only: the number is out of range.
		return 0, fmt.Errorf("group %q: %s %s is too large", part, what, s)
	}
	return v, nil
}

// cluster is the simulated cluster's nodes, by size.
type cluster struct {
	// groups are as Options give them: nodes are created and named in
	// this order.
	groups []NodeGroup
	// bySize holds one group per size, largest first: packing takes the
	// largest nodes first, as the fewest nodes hold a job there.
	bySize []NodeGroup
	total  int
}

// newCluster returns the cluster opts describe: NodeGroups, or Nodes
// nodes of GPUsPerNode GPUs.
func newCluster(opts Options) (*cluster, error) {
	groups := opts.NodeGroups
	switch {
	case len(groups) > 0 && (opts.Nodes != 0 || opts.GPUsPerNode != 0):
		return nil, fmt.Errorf("simulate: give node groups (%s) or nodes and GPUs per node (%d x %d), not both",
			FormatNodeGroups(groups), opts.Nodes, opts.GPUsPerNode)
	case len(groups) == 0 && (opts.Nodes < 1 || opts.GPUsPerNode < 1):
		return nil, fmt.Errorf("simulate: need at least one node with one GPU (got %d x %d)", opts.Nodes, opts.GPUsPerNode)
	case len(groups) == 0:
		groups = []NodeGroup{{Nodes: opts.Nodes, GPUs: opts.GPUsPerNode}}
	}
	if err := CheckNodeGroups(groups); err != nil {
		return nil, fmt.Errorf("simulate: cluster %s: %w", FormatNodeGroups(groups), err)
	}
	c := &cluster{groups: slices.Clone(groups)}
	sorted := slices.Clone(groups)
	slices.SortStableFunc(sorted, func(a, b NodeGroup) int { return b.GPUs - a.GPUs })
	for _, g := range sorted {
		c.total += g.Nodes * g.GPUs
		if n := len(c.bySize); n > 0 && c.bySize[n-1].GPUs == g.GPUs {
			c.bySize[n-1].Nodes += g.Nodes
		} else {
			c.bySize = append(c.bySize, g)
		}
	}
	return c, nil
}

// largest is the GPUs of the largest node.
func (c *cluster) largest() int { return c.bySize[0].GPUs }

// workers is how many workers of g GPUs the nodes hold, each on one
// node: the most a job of G = g can ever run.
func (c *cluster) workers(g int) int {
	n := 0
	for _, s := range c.bySize {
		n += s.Nodes * (s.GPUs / g)
	}
	return n
}

// pack is k workers of g GPUs each packed onto as few nodes as possible,
// in GPUs per node: as many whole workers on each node as it holds, the
// largest nodes first. Past the nodes that hold a worker of g, more nodes
// of the largest size follow, with at least one worker each, so that a
// performance model always gets a placement (on one size of node this is
// how the simulator has always packed).
func (c *cluster) pack(k, g int) []int {
	var p []int
	for _, s := range c.bySize {
		per := s.GPUs / g
		if per == 0 {
			break // smaller nodes hold none either
		}
		for range s.Nodes {
			if k <= 0 {
				return p
			}
			w := min(k, per)
			p = append(p, w*g)
			k -= w
		}
	}
	per := max(c.largest()/g, 1)
	for k > 0 {
		w := min(k, per)
		p = append(p, w*g)
		k -= w
	}
	return p
}

// String writes the cluster as --cluster reads it.
func (c *cluster) String() string { return FormatNodeGroups(c.groups) }
