package algorithm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vodascheduler/voda/internal/model"
)

// per makes a test job's workers hold g GPUs each.
func per(g int) jobOpt { return func(j *model.Job) { j.Spec.GPUsPerWorker = g } }

// Hand-computed cases with workers of different sizes (G GPUs a worker):
// every algorithm hands out whole workers. Each comment shows the
// arithmetic, in GPUs.
func TestMultiGPUWorkers(t *testing.T) {
	t.Run(NameFIFO, func(t *testing.T) {
		runCases(t, NameFIFO, []allocCase{{
			// a asks 3 workers of 4: 12 of 16; b 3 of 2 = 6 > 4 left;
			// c 2 of 1 fits (2 left); d 1 of 2 fits (0 left).
			name: "requested workers of G, with backfill",
			snap: snapshot([]int{8, 8},
				job("a", 1, 3, 3, per(4), submitted(0)), job("b", 1, 3, 4, per(2), submitted(1)),
				job("c", 1, 2, 4, submitted(2)), job("d", 1, 1, 2, per(2), submitted(3))),
			want:      map[string]int{"a": 12, "c": 2, "d": 2},
			wantOrder: []string{"a", "b", "c", "d"},
		}})
	})
	t.Run(NameSRJF, func(t *testing.T) {
		runCases(t, NameSRJF, []allocCase{{
			// Order d(100) b(200) a(300) c(unknown): d 2, b 6, a 12 > 8
			// left, c 2.
			name: "shortest first, workers of G",
			snap: snapshot([]int{8, 8},
				job("a", 1, 3, 3, per(4), rem(300)), job("b", 1, 3, 4, per(2), rem(200)),
				job("c", 1, 2, 4), job("d", 1, 1, 2, per(2), rem(100))),
			want:      map[string]int{"d": 2, "b": 6, "c": 2},
			wantOrder: []string{"d", "b", "a", "c"},
		}})
	})
	t.Run(NameTiresias, func(t *testing.T) {
		runCases(t, NameTiresias, []allocCase{{
			// Queue order a, b (queue 0), c (queue 1): a 2x4 = 8 of 12,
			// b 3x2 = 6 > 4 left, c 4x1 = 4.
			name: "queues, workers of G",
			snap: snapshot([]int{8, 4},
				job("a", 1, 2, 2, per(4), queue(0, 0)), job("b", 1, 3, 3, per(2), queue(0, 5)), job("c", 1, 4, 4, queue(1, 0))),
			want: map[string]int{"a": 8, "c": 4},
		}})
	})
	// a: 1-3 workers of 4, b: 1-4 of 2, c: 1-2 of 1; mins 4 + 2 + 1 = 7.
	elastic := func(total int, opts ...[]jobOpt) *model.Snapshot {
		return snapshot([]int{total},
			job("a", 1, 1, 3, append([]jobOpt{per(4), submitted(0)}, opts[0]...)...),
			job("b", 1, 1, 4, append([]jobOpt{per(2), submitted(1)}, opts[1]...)...),
			job("c", 1, 1, 2, append([]jobOpt{submitted(2)}, opts[2]...)...))
	}
	none := [][]jobOpt{nil, nil, nil}
	t.Run(NameElasticFIFO, func(t *testing.T) {
		runCases(t, NameElasticFIFO, []allocCase{{
			// Spare 16 - 7 = 9. Round 1, a worker each in order: a +4
			// (5 left), b +2 (3), c +1 (2). Round 2: a's next worker (4)
			// does not fit, b +2 (0), c is at its max.
			name: "round-robin in workers",
			snap: elastic(16, none...),
			want: map[string]int{"a": 8, "b": 6, "c": 2},
		}, {
			// Spare 13 - 7 = 6. Round 1: a +4 (2 left), b +2 (0), c's
			// worker does not fit.
			name: "a worker that does not fit is skipped",
			snap: elastic(13, none...),
			want: map[string]int{"a": 8, "b": 4, "c": 1},
		}})
	})
	t.Run(NameElasticSRJF, func(t *testing.T) {
		runCases(t, NameElasticSRJF, []allocCase{{
			// Order c(100) b(200) a(300); spare 13 - 7 = 6. Round 1: c
			// +1 (5 left), b +2 (3), a's worker of 4 does not fit.
			// Round 2: c at max, b +2 (1), a does not fit.
			name: "shortest first, round-robin in workers",
			snap: elastic(13, []jobOpt{rem(300)}, []jobOpt{rem(200)}, []jobOpt{rem(100)}),
			want: map[string]int{"a": 4, "b": 6, "c": 2},
		}})
	})
	t.Run(NameElasticTiresias, func(t *testing.T) {
		runCases(t, NameElasticTiresias, []allocCase{{
			// Mins: a 2, b 1, spare 5. Gains per GPU: a from 2 to 4
			// (4-2)/2 = 1, b from 1 to 2 0.8: a +2 (3 left). a from 4 to 6
			// (5-4)/2 = 0.5, b 0.8: b +1 (2 left). a 0.5, b 0.6: b +1 (1
			// left). a's worker needs 2: b 0.4, b +1 (0 left).
			name: "largest gain per GPU, a worker at a time",
			snap: snapshot([]int{8},
				job("a", 1, 1, 3, per(2), queue(0, 0), curve(0, 1, 2, 3, 4, 4.5, 5)),
				job("b", 1, 1, 4, queue(0, 1), curve(0, 1, 1.8, 2.4, 2.8))),
			want: map[string]int{"a": 4, "b": 4},
		}})
	})
	t.Run(NameFfDL, func(t *testing.T) {
		sa := curve(0, 1, 1.8, 2.5, 3.0, 3.6, 4.2, 4.6, 5.0)
		sb := curve(0, 1, 1.9, 2.7, 3.4, 4.0, 4.5, 4.9, 5.2)
		runCases(t, NameFfDL, []allocCase{{
			// a takes 0, 4 or 8 GPUs: 0+5.2, 3.0+3.4 = 6.4 (best), 5.0+0.
			// With one GPU a worker a 3, b 5 would give 2.5+4.0 = 6.5.
			name: "whole workers only",
			snap: snapshot([]int{8}, job("a", 1, 1, 2, per(4), sa), job("b", 1, 1, 8, submitted(1), sb)),
			want: map[string]int{"a": 4, "b": 4},
		}, {
			name: "the same jobs with one GPU a worker",
			snap: snapshot([]int{8}, job("a", 1, 1, 8, sa), job("b", 1, 1, 8, submitted(1), sb)),
			want: map[string]int{"a": 3, "b": 5},
		}})
	})
	t.Run(NameAFSL, func(t *testing.T) {
		runCases(t, NameAFSL, []allocCase{{
			// s (short, one GPU a worker) and l (long, two): s at 0 wins
			// (+Inf): s 1. s's gain (1.5-1)/1 = 0.5 per GPU; l at 0:
			// 1/2 per GPU, not more: s 2. s (1.8-1.5)/1.5 = 0.2; l 0.5: l
			// 2 (2 left). s 0.2; l from 2 to 4 GPUs (3.4-1.9)/3.4/2 =
			// 0.22: l 4 (0 left).
			name: "relative gain per GPU of the next worker",
			snap: snapshot([]int{6},
				job("s", 1, 1, 4, rem(100), curve(0, 1, 1.5, 1.8, 2.0)),
				job("l", 1, 1, 2, per(2), rem(1000), curve(0, 1, 1.9, 2.7, 3.4))),
			want: map[string]int{"s": 2, "l": 4},
		}, {
			// As above, but l's step to 4 GPUs (gain 0.22 per GPU) is all
			// of the 2 left only if they are free: with 5 GPUs, after s 2
			// and l 2 one is left, l's worker needs 2, so s takes it.
			name: "a worker that does not fit leaves the GPU to a smaller one",
			snap: snapshot([]int{5},
				job("s", 1, 1, 4, rem(100), curve(0, 1, 1.5, 1.8, 2.0)),
				job("l", 1, 1, 2, per(2), rem(1000), curve(0, 1, 1.9, 2.7, 3.4))),
			want: map[string]int{"s": 3, "l": 2},
		}})
	})
	t.Run(NameGoodput, func(t *testing.T) {
		runCases(t, NameGoodput, []allocCase{{
			// Equal remaining times, so values compare as gains per GPU.
			// b 1 (1.0 against a's 3.4/4 = 0.85); b to 2 (0.9); a to 4
			// (0.85 against b's 0.8; 2 left); a's next worker needs 4:
			// b to 3 (0.8), to 4 (0.7).
			name: "steps of whole workers",
			snap: snapshot([]int{8},
				job("a", 1, 1, 2, per(4), rem(1000), curve(0, 1, 1.8, 2.5, 3.4, 4, 4.6, 5.2, 5.8)),
				job("b", 1, 1, 8, submitted(1), rem(1000), curve(0, 1, 1.9, 2.7, 3.4, 4.0, 4.5, 4.9, 5.2))),
			want: map[string]int{"a": 4, "b": 4},
		}})
	})
}

// Every algorithm gives every job whole workers (a multiple of its G
// within its bounds) and never more GPUs than the cluster has, on random
// snapshots mixing G in {1, 2, 4, 8} on nodes of 4 and 8 GPUs, small
// enough for FfDLOptimizer's DP and large enough for its greedy.
func TestMultiGPUWorkersProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	for _, name := range Builtin().Names() {
		a := mustNew(t, name)
		for round := range 40 {
			n := 1 + rng.IntN(12)
			if round%10 == 9 {
				n = 3000
			}
			var nodes []int
			for range 1 + rng.IntN(8) {
				nodes = append(nodes, []int{4, 8}[rng.IntN(2)])
			}
			var jobs []model.Job
			for i := range n {
				g := []int{1, 1, 2, 4, 8}[rng.IntN(5)]
				minW := 1 + rng.IntN(3)
				maxW := minW + rng.IntN(4)
				opts := []jobOpt{per(g), submitted(rng.IntN(100)), rem(float64(1 + rng.IntN(10000)))}
				if rng.IntN(2) == 0 {
					s := []float64{0}
					for k := 1; k <= maxW*g; k++ {
						s = append(s, s[k-1]+rng.Float64())
					}
					opts = append(opts, curve(s...))
				}
				if rng.IntN(3) == 0 {
					opts = append(opts, running(g*minW))
				}
				jobs = append(jobs, job(fmt.Sprintf("j%d", i), minW, minW+rng.IntN(maxW-minW+1), maxW, opts...))
			}
			snap := snapshot(nodes, jobs...)
			got := allocate(t, a, snap)
			if err := model.CheckAllocation(snap, got); err != nil {
				t.Fatalf("%s, round %d (%d jobs): %v", name, round, n, err)
			}
		}
	}
}
