package workload

import (
	"cmp"
	"slices"
	"strings"
)

// Sort orders jobs by submit time, then name: the order every reader
// returns, so that equal inputs give equal simulations.
func Sort(jobs []Job) {
	slices.SortStableFunc(jobs, func(a, b Job) int {
		if c := cmp.Compare(a.Submit, b.Submit); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
