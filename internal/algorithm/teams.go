package algorithm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Quota is one team's share of a GPU type's GPUs: Guarantee GPUs whenever
// its jobs want them, at most Limit (0: no limit), and of the GPUs beyond
// every team's guarantee a share in proportion to Weight.
type Quota struct {
	Team      string
	Guarantee int
	Limit     int
	Weight    float64
}

// TeamDemand is a team's quota and the GPUs its jobs want now.
type TeamDemand struct {
	Quota
	Demand int
}

// Entitlements divides total GPUs among teams (sorted by Team, names
// unique) and returns each team's GPUs, in the same order:
//
//  1. each team gets min(demand, guarantee, limit); when those exceed
//     total (guarantees sold beyond the cluster, or nodes lost), total is
//     divided in proportion to the guarantees instead, each team capped
//     at its own;
//  2. what is left goes to the teams that want more, in proportion to
//     their weights, each up to min(demand, limit), the share of a team
//     that needs less going to the others;
//  3. GPUs that do not divide evenly go one at a time to the teams with
//     the largest remainders of their exact shares, ties by team name.
//
// A team of weight 0 gets its guarantee and nothing beyond while another
// team wants GPUs; it never gets more than it demands. The answer depends
// on its arguments only.
func Entitlements(total int, teams []TeamDemand) ([]int, error) {
	if total < 0 {
		return nil, fmt.Errorf("entitlements: %d GPUs", total)
	}
	for i, t := range teams {
		switch {
		case i > 0 && teams[i-1].Team >= t.Team:
			return nil, fmt.Errorf("entitlements: team %q after %q: want unique names in order", t.Team, teams[i-1].Team)
		case t.Demand < 0 || t.Guarantee < 0 || t.Limit < 0:
			return nil, fmt.Errorf("entitlements: team %q: demand %d, guarantee %d, limit %d: want none negative", t.Team, t.Demand, t.Guarantee, t.Limit)
		case !(t.Weight >= 0) || math.IsInf(t.Weight, 1):
			return nil, fmt.Errorf("entitlements: team %q: weight %v: want a finite number, 0 or more", t.Team, t.Weight)
		}
	}
	want := make([]int, len(teams)) // min(demand, limit)
	base := make([]int, len(teams)) // min(want, guarantee)
	sum := 0
	for i, t := range teams {
		want[i] = t.Demand
		if t.Limit > 0 {
			want[i] = min(want[i], t.Limit)
		}
		base[i] = min(want[i], t.Guarantee)
		sum += base[i]
	}
	got := make([]int, len(teams))
	if sum > total {
		// More guaranteed than there is: by guarantee, each up to its own.
		shares := make([]float64, len(teams))
		for i := range teams {
			shares[i] = float64(teams[i].Guarantee)
		}
		fill(got, base, shares, total, teams)
		return got, nil
	}
	copy(got, base)
	shares := make([]float64, len(teams))
	for i := range teams {
		shares[i] = teams[i].Weight
	}
	fill(got, want, shares, total-sum, teams)
	return got, nil
}

// fill hands out left GPUs to the teams below their caps in proportion to
// their shares (water-filling: a team that reaches its cap leaves its
// share to the others), then the GPUs the proportions leave over one at a
// time by the largest remainder, ties by team order. Teams of share 0 get
// nothing while a team of a positive share is below its cap.
func fill(got, caps []int, shares []float64, left int, teams []TeamDemand) {
	for left > 0 {
		var open []int
		var w float64
		for i := range got {
			if got[i] < caps[i] && shares[i] > 0 {
				open = append(open, i)
				w += shares[i]
			}
		}
		if len(open) == 0 {
			// Only teams of share 0 want more: nobody else wants these
			// GPUs, so they share them equally rather than leave them idle.
			shares = slices.Clone(shares)
			for i := range got {
				if got[i] < caps[i] {
					open = append(open, i)
					shares[i], w = 1, w+1
				}
			}
			if len(open) == 0 {
				return
			}
		}
		type rem struct {
			i    int
			frac float64
		}
		var rems []rem
		given, capped := 0, false
		for _, i := range open {
			exact := float64(left) * shares[i] / w
			n := int(exact)
			if room := caps[i] - got[i]; n >= room {
				n, capped = room, true
			} else {
				rems = append(rems, rem{i, exact - float64(n)})
			}
			got[i] += n
			given += n
		}
		left -= given
		if capped {
			continue // the capped teams' shares go round again
		}
		// Nobody capped: the fractions are what is left, fewer GPUs than
		// open teams.
		slices.SortStableFunc(rems, func(a, b rem) int {
			return cmp.Or(cmp.Compare(b.frac, a.frac), cmp.Compare(teams[a.i].Team, teams[b.i].Team))
		})
		for _, r := range rems {
			if left == 0 {
				break
			}
			if got[r.i] < caps[r.i] {
				got[r.i]++
				left--
			}
		}
	}
}
