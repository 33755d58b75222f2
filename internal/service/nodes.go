package service

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// nodes keeps the core's nodes in line with the cluster's, and tells the
// cluster what a node's loss does to the jobs it held. Its methods take
// the core they act on: loop goroutine only.
type nodes struct {
	backend Backend
	log     *slog.Logger
}

// watchNodes brings the core's nodes in line with the cluster's each time
// they change, and shows them in the scheduler status at once.
func (s *Service) watchNodes(ctx context.Context, src NodeSource) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-src.NodesChanged():
		}
		current := s.cfg.Backend.Nodes()
		err := s.loop.Do(ctx, func(c *scheduler.Core) {
			s.nodes.sync(ctx, c, s.cfg.Clock.Now(), current)
			s.gpusPerNode()
			s.statuses.putNodes(ctx, s.nodes.states(c))
		})
		if err != nil {
			return err
		}
	}
}

// capacity returns the GPUs of all the GPU type's nodes, cordoned ones
// included: no job can ever hold more.
func (s *Service) capacity() int {
	total := 0
	for _, n := range s.core.Nodes() {
		total += n.GPUs
	}
	return total
}

// sync makes the core's nodes those of current: new and changed nodes
// (capacity, cordon) are added, gone and unready ones removed, and the
// next cycle re-places what they held.
func (ns nodes) sync(ctx context.Context, c *scheduler.Core, now time.Time, current []model.Node) {
	cur := map[string]model.Node{}
	for _, n := range current {
		cur[n.Name] = n
	}
	for _, old := range c.Nodes() {
		n, ok := cur[old.Name]
		if !ok {
			ns.remove(ctx, c, now, old.Name)
			continue
		}
		delete(cur, old.Name)
		if n.GPUs != old.GPUs || n.Cordoned != old.Cordoned {
			ns.log.Info("node changed", "node", n.Name, "gpus", n.GPUs, "cordoned", n.Cordoned)
			if err := c.AddNode(now, n); err != nil {
				ns.log.Warn("update node", "node", n.Name, "err", err)
			}
		}
	}
	for _, n := range current {
		if _, added := cur[n.Name]; !added {
			continue
		}
		ns.log.Info("node joined", "node", n.Name, "gpus", n.GPUs, "cordoned", n.Cordoned)
		if err := c.AddNode(now, n); err != nil {
			ns.log.Warn("add node", "node", n.Name, "err", err)
		}
	}
}

// remove takes a node out of the core and tells the cluster at once
// which jobs lost workers there: a job left with none is halted, the
// others shrink to what they keep. The next cycle re-places them.
func (ns nodes) remove(ctx context.Context, c *scheduler.Core, now time.Time, node string) {
	before := map[string]model.JobPlacement{}
	for _, j := range c.Snapshot(now).Jobs {
		for _, nw := range j.State.Placement {
			if nw.Node == node {
				before[j.Spec.Name] = j.State.Placement
				break
			}
		}
	}
	ns.log.Info("node left", "node", node, "jobsThere", len(before))
	if err := c.RemoveNode(now, node); err != nil {
		ns.log.Warn("remove node", "node", node, "err", err)
		return
	}
	names := make([]string, 0, len(before))
	for name := range before {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		j, _ := c.Job(name)
		a := scheduler.Action{Kind: scheduler.Shrink, Job: name, From: before[name], To: j.State.Placement}
		if len(a.To) == 0 {
			a.Kind = scheduler.Halt
		}
		if err := ns.backend.Apply(ctx, a); err != nil {
			ns.log.Warn("apply the loss of a node", "job", name, "node", node, "err", err)
		}
	}
}

// states are the GPU type's nodes as the scheduler status shows them,
// sorted by name: the core's (ready) nodes and, when the backend knows
// them, those that are not ready.
func (ns nodes) states(c *scheduler.Core) []store.NodeState {
	var out []store.NodeState
	seen := map[string]bool{}
	for _, n := range c.Nodes() {
		out = append(out, store.NodeState{Name: n.Name, GPUs: n.GPUs, Cordoned: n.Cordoned})
		seen[n.Name] = true
	}
	if u, ok := ns.backend.(UnreadyNodes); ok {
		for _, n := range u.NotReadyNodes() {
			if !seen[n.Name] {
				out = append(out, store.NodeState{Name: n.Name, GPUs: n.GPUs, Cordoned: n.Cordoned, NotReady: true})
			}
		}
	}
	slices.SortFunc(out, func(a, b store.NodeState) int { return strings.Compare(a.Name, b.Name) })
	return out
}
