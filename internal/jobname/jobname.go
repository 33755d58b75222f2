package jobname

import (
	"regexp"
	"strconv"
	"sync"
	"time"
)

// StampLayout is the time a name carries: the original's 24-hour
// timestamp, in UTC.
const StampLayout = "20060102-150405"

// New is the first name to try for a job named name submitted at t:
// name-YYYYMMDD-hhmmss, t in UTC.
func New(name string, t time.Time) string {
	return name + "-" + t.UTC().Format(StampLayout)
}

// stampSuffix is what New appends, with the -N a Namer may add.
var stampSuffix = regexp.MustCompile(`-\d{8}-\d{6}(-\d+)?$`)

// Base is the name the user gave a job named name: name without the
// stamp New appended and the -N a Namer added ("bert-finetune-20261123-
// 101500-2" is "bert-finetune"); name itself when it has none.
func Base(name string) string {
	if m := stampSuffix.FindStringIndex(name); m != nil && m[0] > 0 {
		return name[:m[0]]
	}
	return name
}

// Namer hands out the names to try for a name New made: itself first,
// then -2, -3, ... Its counters only save tries within one API replica;
// the store's unique key is what makes names unique. The zero Namer is
// ready to use and safe for concurrent use.
type Namer struct {
	mu    sync.Mutex
	stamp string         // the latest stamp seen
	next  map[string]int // New's name -> next numeric suffix to try
}

// Next returns the next name to try for first, a name New made.
func (n *Namer) Next(first string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.next == nil {
		n.next = map[string]int{}
	}
	// Counters of the current and the previous second are kept: requests
	// of a burst across a second's boundary arrive with both stamps
	// interleaved, and a counter restarted at every flip would walk each
	// request up through every name already taken, one store write each.
	if stamp := stampOf(first); stamp > n.stamp {
		for k := range n.next {
			if stampOf(k) < n.stamp {
				delete(n.next, k)
			}
		}
		n.stamp = stamp
	}
	i := n.next[first]
	n.next[first] = i + 1
	if i == 0 {
		return first
	}
	return first + "-" + strconv.Itoa(i+1)
}

// counters is how many names' counters n keeps.
func (n *Namer) counters() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.next)
}

// stampOf is the stamp at the end of a name New made; the whole of a
// shorter one.
func stampOf(name string) string {
	return name[max(len(name)-len(StampLayout), 0):]
}
