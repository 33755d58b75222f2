package algorithm

import (
	"testing"

	"github.com/vodascheduler/voda/internal/model"
)

// Hand-computed cases, one table per algorithm. Each case's comment shows
// the arithmetic.

type allocCase struct {
	name      string
	params    []string
	snap      *model.Snapshot
	want      map[string]int
	wantOrder []string // checked when set
}

func runCases(t *testing.T, algorithm string, cases []allocCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := allocate(t, mustNew(t, algorithm, tc.params...), tc.snap)
			if d := diffGPUs(tc.want, got.GPUs); d != "" {
				t.Errorf("%s GPUs (-want,+got):\n%s", algorithm, d)
			}
			if tc.wantOrder != nil {
				if d := diffOrder(tc.wantOrder, got.Order); d != "" {
					t.Errorf("%s Order (-want,+got):\n%s", algorithm, d)
				}
			}
		})
	}
}

func TestFIFO(t *testing.T) {
	runCases(t, NameFIFO, []allocCase{{
		// a takes 6 of 8; b (4) does not fit in 2; c (2) backfills.
		name:      "backfill",
		snap:      snapshot([]int{4, 4}, job("c", 1, 2, 4, submitted(2)), job("a", 1, 6, 8, submitted(0)), job("b", 4, 4, 4, submitted(1))),
		want:      map[string]int{"a": 6, "c": 2},
		wantOrder: []string{"a", "b", "c"},
	}, {
		// Same submit time: a before b by name.
		name:      "ties by name",
		snap:      snapshot([]int{4}, job("b", 1, 4, 4), job("a", 1, 4, 4)),
		want:      map[string]int{"a": 4},
		wantOrder: []string{"a", "b"},
	}, {
		name: "requested, not max",
		snap: snapshot([]int{16}, job("a", 1, 2, 8)),
		want: map[string]int{"a": 2},
	}})
}

func TestSRJF(t *testing.T) {
	runCases(t, NameSRJF, []allocCase{{
		// Order b(100) d(200) a(300) c(unknown): b 4, d 4, a 4 > 2 left, c 2.
		name: "shortest first with backfill",
		snap: snapshot([]int{10},
			job("a", 1, 4, 4, submitted(0), rem(300)),
			job("b", 1, 4, 4, submitted(1), rem(100)),
			job("c", 1, 2, 2, submitted(2), rem(-1)),
			job("d", 1, 4, 4, submitted(3), rem(200))),
		want:      map[string]int{"b": 4, "d": 4, "c": 2},
		wantOrder: []string{"b", "d", "a", "c"},
	}, {
		// Unknown (negative, NaN) last, among themselves by arrival; equal
		// remaining times by arrival.
		name: "unknown last, ties by arrival",
		snap: snapshot([]int{2},
			job("u1", 1, 1, 1, submitted(0), rem(nan())),
			job("u2", 1, 1, 1, submitted(1), rem(-5)),
			job("k2", 1, 1, 1, submitted(3), rem(50)),
			job("k1", 1, 1, 1, submitted(2), rem(50))),
		want:      map[string]int{"k1": 1, "k2": 1},
		wantOrder: []string{"k1", "k2", "u1", "u2"},
	}})
}

func TestElasticFIFO(t *testing.T) {
	a := job("a", 1, 1, 4, submitted(0))
	b := job("b", 2, 2, 3, submitted(1))
	c := job("c", 4, 4, 8, submitted(2))
	d := job("d", 1, 1, 1, submitted(3))
	runCases(t, NameElasticFIFO, []allocCase{{
		// Mins 1+2+4+1 = 8, 2 spare: round 1 gives a and b one each.
		name:      "min then round-robin",
		snap:      snapshot([]int{10}, d, c, b, a),
		want:      map[string]int{"a": 2, "b": 3, "c": 4, "d": 1},
		wantOrder: []string{"a", "b", "c", "d"},
	}, {
		// 6 spare: round 1 a b c (3), round 2 a c (b full), round 3 a.
		name: "several rounds",
		snap: snapshot([]int{14}, a, b, c, d),
		want: map[string]int{"a": 4, "b": 3, "c": 6, "d": 1},
	}, {
		// Enough for everyone's max.
		name: "all at max",
		snap: snapshot([]int{100}, a, b, c, d),
		want: map[string]int{"a": 4, "b": 3, "c": 8, "d": 1},
	}, {
		// x 4 (2 left); y needs 3: nothing; z 1, then the spare one.
		name: "no min, nothing",
		snap: snapshot([]int{6}, job("x", 4, 4, 4, submitted(0)), job("y", 3, 3, 6, submitted(1)), job("z", 1, 1, 2, submitted(2))),
		want: map[string]int{"x": 4, "z": 2},
	}})
}

func TestElasticSRJF(t *testing.T) {
	runCases(t, NameElasticSRJF, []allocCase{{
		// Order s(10) m(20) l(unknown): mins 1+2+1 = 4, 3 spare: round 1
		// gives s, m and l one each.
		name: "min then round-robin, shortest first",
		snap: snapshot([]int{7},
			job("l", 1, 1, 8, submitted(0)),
			job("m", 2, 2, 8, submitted(1), rem(20)),
			job("s", 1, 1, 2, submitted(2), rem(10))),
		want:      map[string]int{"s": 2, "m": 3, "l": 2},
		wantOrder: []string{"s", "m", "l"},
	}, {
		// 1 spare after mins 1+2+1: goes to the shortest.
		name: "one spare to the shortest",
		snap: snapshot([]int{5},
			job("l", 1, 1, 8, submitted(0)),
			job("m", 2, 2, 8, submitted(1), rem(20)),
			job("s", 1, 1, 2, submitted(2), rem(10))),
		want: map[string]int{"s": 2, "m": 2, "l": 1},
	}})
}

func TestElasticTiresias(t *testing.T) {
	// a has diminishing gains 0.9, 0.8, 0.7; b is linear (gain 1).
	a := job("a", 1, 1, 4, queue(0, 0), curve(0, 1, 1.9, 2.7, 3.4))
	b := job("b", 1, 1, 4, queue(0, 1))
	// p is superlinear at 2 (gain 1.5), then 1.0; o is linear.
	o := job("o", 1, 1, 4, queue(0, 0))
	p := job("p", 1, 1, 4, queue(1, 0), curve(0, 1, 2.5, 3.5))
	big := job("big", 8, 8, 8, queue(1, 5))
	runCases(t, NameElasticTiresias, []allocCase{{
		// Mins 1+1, 4 spare: b, b, b (gain 1 > 0.9), then a (0.9).
		name:      "largest marginal gain",
		snap:      snapshot([]int{6}, b, a),
		want:      map[string]int{"a": 2, "b": 4},
		wantOrder: []string{"a", "b"},
	}, {
		// Mins o 1, p 1, big 0 (pending 1). 2 spare: p (1.5), then o and p
		// tie at 1.0 and o is first in queue order.
		name:   "growth by gain, ties by queue order",
		params: []string{"pending_limit=1"},
		snap:   snapshot([]int{4}, o, p, big),
		want:   map[string]int{"o": 2, "p": 2},
	}, {
		// Same, but 1 pending job is more than pending_limit 0: p (queue
		// 1) is held at its min and o takes both spare GPUs.
		name:   "congested: low queue held at min",
		params: []string{"pending_limit=0"},
		snap:   snapshot([]int{4}, o, p, big),
		want:   map[string]int{"o": 3, "p": 1},
	}, {
		// Queue order first: q0 jobs get their min before q1 ones.
		name:      "queue order for mins",
		snap:      snapshot([]int{8}, job("q1", 4, 4, 4, queue(1, 0)), job("q0", 6, 6, 6, queue(0, 9))),
		want:      map[string]int{"q0": 6},
		wantOrder: []string{"q0", "q1"},
	}, {
		// A flat curve gives no gain: the GPU stays idle.
		name: "no positive gain, no GPU",
		snap: snapshot([]int{4}, job("flat", 1, 1, 4, curve(0, 1, 1))),
		want: map[string]int{"flat": 1},
	}})
}

func TestFfDL(t *testing.T) {
	runCases(t, NameFfDL, []allocCase{{
		// a=4: 2.0; a=2,b=2: 1.5+1.9 = 3.4; a=1,b=2: 2.9. Best 3.4.
		name: "knapsack",
		snap: snapshot([]int{4}, job("a", 1, 1, 4, curve(0, 1, 1.5, 1.8, 2.0)), job("b", 2, 2, 2, curve(0, 1, 1.9))),
		want: map[string]int{"a": 2, "b": 2},
	}, {
		// Two identical linear jobs, 3 GPUs: 3 either way; the DP leaves
		// ties to the earlier job (b, reconstructed first, keeps the
		// fewest: 0).
		name: "ties to the earlier job",
		snap: snapshot([]int{3}, job("b", 1, 1, 4, submitted(1)), job("a", 1, 1, 4, submitted(0))),
		want: map[string]int{"a": 3},
	}, {
		// Flat beyond 2: the third and fourth GPUs raise nothing.
		name: "no GPU without gain",
		snap: snapshot([]int{4}, job("a", 1, 1, 4, curve(0, 1, 1.6))),
		want: map[string]int{"a": 2},
	}})
}

func TestAFSL(t *testing.T) {
	runCases(t, NameAFSL, []allocCase{{
		// GPU 1: both at 0, shorter s wins. GPU 2: s's gain 1/1 = 1 vs l's
		// 1: not more, s. GPU 3: s's 1/2 = 0.5 < l's 1: l. GPU 4: s's 0.5
		// vs l's (1.9-1)/1.9 = 0.47: s.
		name:      "shorter unless the longer gains more",
		snap:      snapshot([]int{4}, job("l", 1, 1, 4, rem(1000), curve(0, 1, 1.9, 2.7, 3.4)), job("s", 1, 1, 4, rem(100))),
		want:      map[string]int{"s": 3, "l": 1},
		wantOrder: []string{"s", "l"},
	}, {
		// Between jobs at 0 the shorter wins, unknown length last.
		name: "shortest first among jobs at 0",
		snap: snapshot([]int{2}, job("u", 1, 1, 1, submitted(0)), job("y", 1, 1, 1, rem(9)), job("x", 1, 1, 1, rem(5))),
		want: map[string]int{"x": 1, "y": 1},
	}, {
		// a takes 1, then 2 (b's gain 1 is not more than a's 1/1); at
		// a's 1/2, b takes its min of 2 at once; a gets the rest.
		name: "min in one step",
		snap: snapshot([]int{6}, job("a", 1, 1, 8, rem(1)), job("b", 2, 2, 2, rem(2))),
		want: map[string]int{"a": 4, "b": 2},
	}})
}

func TestTiresias(t *testing.T) {
	artifact := []string{"threshold=57600", "starvation=0"}
	runCases(t, NameTiresias, []allocCase{{
		// Queue 0 before queue 1; within a queue by QueueSince, not by
		// submit time.
		name:   "queue order",
		params: artifact,
		snap: snapshot([]int{8},
			job("z", 1, 2, 2, submitted(0), queue(1, 0)),
			job("x", 1, 4, 4, submitted(1), queue(0, 50)),
			job("y", 1, 4, 4, submitted(2), queue(0, 10))),
		want:      map[string]int{"y": 4, "x": 4},
		wantOrder: []string{"y", "x", "z"},
	}, {
		// a 6 of 8; b (4) does not fit; c in queue 1 backfills with 2.
		name:   "backfill",
		params: artifact,
		snap: snapshot([]int{4, 4},
			job("a", 6, 6, 6, queue(0, 0)),
			job("b", 4, 4, 4, queue(0, 1)),
			job("c", 2, 2, 2, queue(1, 0))),
		want: map[string]int{"a": 6, "c": 2},
	}, {
		// No fragmentation check: 3 nodes of 2, a 5-GPU job still fits
		// the total and the placer spreads it.
		name:   "total only",
		params: artifact,
		snap:   snapshot([]int{2, 2, 2}, job("a", 5, 5, 5)),
		want:   map[string]int{"a": 5},
	}, {
		// Equal queue and QueueSince: by arrival.
		name:      "ties by arrival",
		snap:      snapshot([]int{4}, job("b", 4, 4, 4, queue(0, 3)), job("a", 4, 4, 4, submitted(1), queue(0, 3))),
		want:      map[string]int{"b": 4},
		wantOrder: []string{"b", "a"},
	}})
}

func TestTiresiasRequeueArtifact(t *testing.T) {
	tir := mustNew(t, NameTiresias, "threshold=57600", "starvation=0").(Prioritizer)
	served := func(name string, q int, service float64) model.Job {
		j := job(name, 1, 1, 1, queue(q, 0))
		j.State.QueueService = service
		return j
	}
	starving := served("starving", 1, 99999) // would be promoted with a starvation knob
	starving.State.WaitingSince = at(0)
	starving.State.QueueRunSeconds = 1
	snap := snapshot([]int{4},
		served("at", 0, 57600),
		served("below", 0, 57599.999),
		served("above", 0, 1e6),
		served("already", 1, 1e6),
		starving)
	got := tir.Requeue(snap)
	want := []model.QueueChange{{Job: "at", Queue: 1}, {Job: "above", Queue: 1}}
	if d := diffQueueChanges(want, got); d != "" {
		t.Errorf("Requeue (-want,+got):\n%s", d)
	}
}

func TestTiresiasStarvationPromotion(t *testing.T) {
	tir := mustNew(t, NameTiresias).(Prioritizer) // starvation 8
	waiting := func(name string, q, gpus int, waitedSec int, run float64) model.Job {
		j := job(name, 1, 1, 1, queue(q, 0))
		j.State.GPUs = gpus
		j.State.QueueRunSeconds = run
		if waitedSec >= 0 {
			j.State.WaitingSince = at(100000 - waitedSec) // snapshot Now is at(100000)
		}
		return j
	}
	snap := snapshot([]int{4},
		waiting("due", 1, 0, 800, 100),         // waited exactly 8x
		waiting("early", 1, 0, 799, 100),       // just short
		waiting("running", 1, 1, 800, 100),     // holds GPUs
		waiting("never-waited", 1, 0, -1, 100), // zero WaitingSince
		waiting("never-ran", 1, 0, 800, 0),     // no run to compare with
		waiting("top", 0, 0, 800, 100),         // already in queue 0
		waiting("deep", 2, 0, 8000, 100))       // any queue >= 1
	got := tir.Requeue(snap)
	want := []model.QueueChange{{Job: "due", Queue: 0}, {Job: "deep", Queue: 0}}
	if d := diffQueueChanges(want, got); d != "" {
		t.Errorf("Requeue (-want,+got):\n%s", d)
	}
}

func diffQueueChanges(want, got []model.QueueChange) string {
	if len(want) == len(got) {
		same := true
		for i := range want {
			same = same && want[i] == got[i]
		}
		if same {
			return ""
		}
	}
	return "  -" + sprint(want) + "\n  +" + sprint(got) + "\n"
}

func TestGoodput(t *testing.T) {
	runCases(t, NameGoodput, []allocCase{{
		// Linear curves, values 1/R per GPU: s's 1/100 beats l's 1/1000 for
		// every GPU.
		name:      "short job beats long",
		snap:      snapshot([]int{4}, job("l", 1, 1, 4, submitted(0), rem(1000)), job("s", 1, 1, 4, submitted(1), rem(100))),
		want:      map[string]int{"s": 4},
		wantOrder: []string{"s", "l"},
	}, {
		// flat: 1/100, 0.5/100, then 0: no third GPU; o (1/10000 each)
		// takes the other 6.
		name: "flat curve, no GPU without gain",
		snap: snapshot([]int{8}, job("flat", 1, 1, 4, rem(100), curve(0, 1, 1.5, 1.5, 1.5)), job("o", 1, 1, 8, rem(10000))),
		want: map[string]int{"flat": 2, "o": 6},
	}, {
		// Round 1: a (running at 2, its first two GPUs held at 2/1000)
		// grows to 4, but saves 1000/2 - 1000/4 = 250 s < 10 x 30 s: it
		// is capped at 2 and the greedy reruns.
		name: "running job not grown below payback",
		snap: snapshot([]int{4}, job("a", 1, 1, 4, running(2), rem(1000))),
		want: map[string]int{"a": 2},
	}, {
		// 2000/2 - 2000/4 = 500 s >= 300 s: a grows.
		name: "running job grown above payback",
		snap: snapshot([]int{4}, job("a", 1, 1, 4, running(2), rem(2000))),
		want: map[string]int{"a": 4},
	}, {
		// A measured restart of 10 s: 250 s >= 100 s.
		name: "measured restart",
		snap: snapshot([]int{4}, job("a", 1, 1, 4, running(2), rem(1000), restart(10))),
		want: map[string]int{"a": 4},
	}, {
		// payback 5: 250 s >= 150 s.
		name:   "payback parameter",
		params: []string{"payback=5"},
		snap:   snapshot([]int{4}, job("a", 1, 1, 4, running(2), rem(1000))),
		want:   map[string]int{"a": 4},
	}, {
		// As "not grown below payback"; once a is capped at 2, b (1/5000
		// per GPU) takes the two GPUs a left.
		name:      "capped job leaves its GPUs to others",
		snap:      snapshot([]int{4}, job("a", 1, 1, 4, running(2), rem(1000)), job("b", 1, 1, 4, submitted(1), rem(5000))),
		want:      map[string]int{"a": 2, "b": 2},
		wantOrder: []string{"a", "b"},
	}, {
		// s (1/100) first; m takes its min 4 at once (4/4/1000 per GPU),
		// then one more.
		name: "min workers in one step",
		snap: snapshot([]int{6}, job("s", 1, 1, 1, rem(100)), job("m", 4, 4, 8, rem(1000))),
		want: map[string]int{"s": 1, "m": 5},
	}, {
		// After s, 3 GPUs are left: m's min 4 does not fit, o takes them.
		name: "min does not fit",
		snap: snapshot([]int{4}, job("s", 1, 1, 1, rem(100)), job("m", 4, 4, 8, rem(1000)), job("o", 1, 1, 4, rem(2000))),
		want: map[string]int{"s": 1, "o": 3},
	}, {
		// l runs on 4: its GPUs are worth 2 x 1/1000 to it, more than n's
		// 1/600.
		name: "hold keeps a running job",
		snap: snapshot([]int{4}, job("l", 1, 4, 4, submitted(0), running(4), rem(1000)), job("n", 1, 1, 4, submitted(1), rem(600))),
		want: map[string]int{"l": 4},
	}, {
		// Without hold n's 1/600 beats l's 1/1000: l is preempted.
		name:   "no hold, preempted",
		params: []string{"hold=1"},
		snap:   snapshot([]int{4}, job("l", 1, 4, 4, submitted(0), running(4), rem(1000)), job("n", 1, 1, 4, submitted(1), rem(600))),
		want:   map[string]int{"n": 4},
	}, {
		// 1/100 beats 2 x 1/100000: a much shorter job preempts.
		name: "preempted for a much shorter job",
		snap: snapshot([]int{4}, job("l", 1, 4, 4, submitted(0), running(4), rem(100000)), job("s", 1, 1, 4, submitted(1), rem(100))),
		want: map[string]int{"s": 4},
	}, {
		// u's unknown remaining time counts as the smallest known, 500: it
		// ties with k1 and follows it by arrival; k2 (5000) waits.
		name: "unknown remaining time is optimistic",
		snap: snapshot([]int{4},
			job("k1", 1, 1, 2, submitted(0), rem(500)),
			job("u", 1, 1, 2, submitted(1), rem(nan())),
			job("k2", 1, 1, 2, submitted(2), rem(5000))),
		want:      map[string]int{"k1": 2, "u": 2},
		wantOrder: []string{"k1", "u", "k2"},
	}, {
		// Nothing known: R = 1 for all. a's gains 1 tie b's first and win
		// by arrival; b's second step is worth only 0.2.
		name: "all remaining times unknown",
		snap: snapshot([]int{5}, job("a", 1, 1, 4, submitted(0)), job("b", 1, 1, 4, submitted(1), curve(0, 1, 1.2))),
		want: map[string]int{"a": 4, "b": 1},
	}})
}
