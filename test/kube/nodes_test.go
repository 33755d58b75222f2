package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/test/vodatest"
)

// TestNodeReadinessAndCordon drives a running elastic job through a node
// that becomes NotReady (kwok's node-not-ready stage) and another that is
// cordoned, on a real control plane: GET /api/v1/nodes and the event
// stream show the node not ready and holding nothing, and the other one
// cordoned; the job is re-placed off the NotReady node, its pods with it,
// and takes no new GPUs on the cordoned one; once the node is Ready and
// uncordoned again, both show so and the job grows back.
func TestNodeReadinessAndCordon(t *testing.T) {
	const gpuType = "ready-gpu"
	k := pyTorchJob // no launcher pod: every pod of the job is a placed worker
	c := newCluster(t, gpuType, 3, 4)
	srv := c.start()
	vc := srv.Client()
	ctx := t.Context()

	// Alone, the job gets 8 of the 12 GPUs.
	job := submit(t, vc, k.manifest("elastic", gpuType, 1, 8, time.Hour))
	j := c.waitPlaced(t, vc, k, job, 8)
	before := j.Placement
	t.Logf("%s placed %v", job, before)

	// notReady is the node with most of the job's workers; cordoned one
	// with fewest (none, if the job left a node free); spare the third.
	nodes := slices.Clone(c.nodes)
	slices.SortStableFunc(nodes, func(a, b string) int { return before[b] - before[a] })
	notReady, spare, cordoned := nodes[0], nodes[1], nodes[2]
	if before[notReady] == 0 {
		t.Fatalf("placement %v holds no workers on any of %v", before, c.nodes)
	}

	// The baseline, so that what follows shows a change: every node ready
	// and uncordoned, holding the job's workers as placed.
	waitNodes(t, srv, gpuType, "every node ready, the job's workers as placed", func(n api.Node) error {
		if !n.Ready || n.Cordoned {
			return fmt.Errorf("ready=%v cordoned=%v", n.Ready, n.Cordoned)
		}
		if got := jobWorkers(n, job); got != before[n.Name] {
			return fmt.Errorf("holds %d of %s's workers, want %d", got, job, before[n.Name])
		}
		return nil
	})
	stream := openEvents(t, srv)
	if n, ok := findNode(stream.snapshotNodes(t), gpuType, notReady); !ok || !n.Ready {
		t.Fatalf("first snapshot: node %s %+v (listed %v), want ready", notReady, n, ok)
	}

	// Cordon first and wait until Voda shows it, so that the cordon is in
	// force when the workers of the NotReady node are re-placed: the
	// cordoned node must take none of them.
	if err := env.SetNodeCordoned(ctx, cordoned, true); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, srv, gpuType, cordoned+" cordoned", func(n api.Node) error {
		if n.Name == cordoned && !n.Cordoned {
			return fmt.Errorf("not cordoned")
		}
		return nil
	})
	if err := env.SetNodeReady(ctx, notReady, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s NotReady, node %s cordoned", notReady, cordoned)

	waitNodes(t, srv, gpuType, notReady+" not ready and empty, "+cordoned+" cordoned", func(n api.Node) error {
		switch {
		case n.Name == notReady && (n.Ready || len(n.Jobs) > 0 || n.FreeGPUs != n.GPUs):
			return fmt.Errorf("ready=%v jobs=%+v free=%d, want not ready, no jobs", n.Ready, n.Jobs, n.FreeGPUs)
		case n.Name == cordoned && (!n.Ready || !n.Cordoned):
			return fmt.Errorf("ready=%v cordoned=%v, want ready and cordoned", n.Ready, n.Cordoned)
		case n.Name == spare && (!n.Ready || n.Cordoned):
			return fmt.Errorf("ready=%v cordoned=%v, want ready and uncordoned", n.Ready, n.Cordoned)
		}
		return nil
	})

	// The job keeps what it had on the cordoned node and fills the spare
	// one: 4 + before[cordoned] workers, none on the NotReady node, pods
	// included (placed compares the pods per node with the placement).
	want := 4 + before[cordoned]
	j = c.waitPlaced(t, vc, k, job, want)
	t.Logf("%s re-placed %v", job, j.Placement)
	if w := j.Placement[notReady]; w > 0 {
		t.Errorf("placement %v keeps %d workers on NotReady node %s", j.Placement, w, notReady)
	}
	if w := j.Placement[cordoned]; w > before[cordoned] {
		t.Errorf("placement %v: %d workers on cordoned node %s, which had %d", j.Placement, w, cordoned, before[cordoned])
	}
	pods, err := workerPods(ctx, c.ns, job)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName == notReady {
			t.Errorf("pod %s still bound to NotReady node %s", p.Name, notReady)
		}
	}

	// The event stream: the stream open since before tells of the change
	// with a nodes event; a new one's snapshot shows it.
	stream.waitNodes(t, gpuType, notReady, false)
	stream.close()
	later := openEvents(t, srv)
	if n, ok := findNode(later.snapshotNodes(t), gpuType, notReady); !ok || n.Ready || len(n.Jobs) > 0 {
		t.Errorf("snapshot while %s is NotReady: %+v (listed %v), want not ready and no jobs", notReady, n, ok)
	}
	later.close()

	// Ready and uncordoned again: both show so, and the job grows back to
	// its maximum.
	if err := env.SetNodeReady(ctx, notReady, true); err != nil {
		t.Fatal(err)
	}
	if err := env.SetNodeCordoned(ctx, cordoned, false); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, srv, gpuType, "every node ready and uncordoned again", func(n api.Node) error {
		if !n.Ready || n.Cordoned {
			return fmt.Errorf("ready=%v cordoned=%v", n.Ready, n.Cordoned)
		}
		return nil
	})
	c.waitPlaced(t, vc, k, job, 8)

	if _, err := vc.DeleteJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, vc, job, "Canceled")
}

// getNodes is GET /api/v1/nodes.
func getNodes(ctx context.Context, srv *vodatest.Server) (api.NodeList, error) {
	var out api.NodeList
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+api.RouteNodes, nil)
	if err != nil {
		return out, err
	}
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return out, err
	}
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("GET %s: %s: %s", api.RouteNodes, resp.Status, b)
	}
	return out, json.Unmarshal(b, &out)
}

// waitNodes polls GET /api/v1/nodes for at most 30 s until it lists the
// GPU type's three nodes and check passes for each.
func waitNodes(t *testing.T, srv *vodatest.Server, gpuType, what string, check func(api.Node) error) {
	t.Helper()
	vodatest.WaitFor(t, "GET "+api.RouteNodes+": "+what, 30*time.Second, func() (bool, error) {
		list, err := getNodes(t.Context(), srv)
		if err != nil {
			return false, err
		}
		var nodes []api.Node
		for _, item := range list.Items {
			if item.GPUType == gpuType {
				nodes = item.Nodes
			}
		}
		if len(nodes) != 3 {
			return false, fmt.Errorf("%d %s nodes listed: %+v", len(nodes), gpuType, nodes)
		}
		for _, n := range nodes {
			if err := check(n); err != nil {
				return false, fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		return true, nil
	})
}

// jobWorkers are job's workers on n as the nodes' view lists them.
func jobWorkers(n api.Node, job string) int {
	for _, j := range n.Jobs {
		if j.Name == job {
			return j.Workers
		}
	}
	return 0
}

func findNode(items []api.GPUTypeNodes, gpuType, name string) (api.Node, bool) {
	for _, item := range items {
		if item.GPUType != gpuType {
			continue
		}
		for _, n := range item.Nodes {
			if n.Name == name {
				return n, true
			}
		}
	}
	return api.Node{}, false
}

// events is an open GET /api/v1/events stream, read just enough to take
// events apart: an "event: " line, a "data: " line, a blank line.
type events struct {
	r      *bufio.Reader
	body   io.Closer
	cancel context.CancelFunc
}

func openEvents(t *testing.T, srv *vodatest.Server) *events {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+api.RouteEvents, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("GET %s: %s", api.RouteEvents, resp.Status)
	}
	e := &events{r: bufio.NewReader(resp.Body), body: resp.Body, cancel: cancel}
	t.Cleanup(e.close)
	return e
}

func (e *events) close() {
	e.cancel()
	e.body.Close()
}

// next returns the next event's name and data, skipping comments.
func (e *events) next() (string, []byte, error) {
	var name string
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			return "", nil, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && name != "":
			return name, []byte(strings.TrimPrefix(line, "data: ")), nil
		}
	}
}

// snapshotNodes reads the first event, which must be the snapshot, and
// returns its nodes.
func (e *events) snapshotNodes(t *testing.T) []api.GPUTypeNodes {
	t.Helper()
	name, data, err := e.next()
	if err != nil {
		t.Fatalf("reading the snapshot: %v", err)
	}
	if name != "snapshot" {
		t.Fatalf("first event %q, want snapshot", name)
	}
	var s api.Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return s.Nodes
}

// waitNodes reads events for at most 30 s until a nodes event of gpuType
// shows node with that readiness.
func (e *events) waitNodes(t *testing.T, gpuType, node string, ready bool) {
	t.Helper()
	timer := time.AfterFunc(30*time.Second, e.cancel)
	defer timer.Stop()
	var seen []string
	for {
		name, data, err := e.next()
		if err != nil {
			t.Fatalf("no nodes event with %s ready=%v within 30 s (%v); nodes events seen: %v", node, ready, err, seen)
		}
		if name != "nodes" {
			continue
		}
		var v api.GPUTypeNodes
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("nodes event %s: %v", data, err)
		}
		if n, ok := findNode([]api.GPUTypeNodes{v}, gpuType, node); ok {
			if n.Ready == ready {
				return
			}
			seen = append(seen, fmt.Sprintf("%s ready=%v", node, n.Ready))
		}
	}
}
