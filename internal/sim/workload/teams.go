package workload

import (
	"fmt"
	"strconv"
	"strings"
)

// Ways SplitTeams deals jobs to teams.
const (
	// SplitEqual deals the jobs round-robin: job i (in workload order) to
	// team (i mod N)+1, so every team gets as many jobs, to within one.
	SplitEqual = "equal"
	// SplitSkewed gives team-1 every other job (half) and deals the rest
	// round-robin to team-2..team-N.
	SplitSkewed = "skewed"
)

// MaxSplitTeams bounds the teams a split makes.
const MaxSplitTeams = 64

// TeamSplit says how to divide a workload without teams among teams
// named team-1 to team-N.
type TeamSplit struct {
	// Kind is SplitEqual or SplitSkewed.
	Kind string
	// N is the number of teams, 1 to MaxSplitTeams (2 or more for
	// SplitSkewed).
	N int
}

// ParseTeamSplit reads KIND:N, KIND being equal or skewed
// ("equal:4", "skewed:4").
func ParseTeamSplit(s string) (TeamSplit, error) {
	kind, n, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return TeamSplit{}, fmt.Errorf("team split %q: want KIND:N (%s:4 or %s:4)", s, SplitEqual, SplitSkewed)
	}
	sp := TeamSplit{Kind: strings.ToLower(strings.TrimSpace(kind))}
	var err error
	if sp.N, err = strconv.Atoi(strings.TrimSpace(n)); err != nil {
		return TeamSplit{}, fmt.Errorf("team split %q: %q is not a number of teams", s, n)
	}
	if err := sp.Check(); err != nil {
		return TeamSplit{}, fmt.Errorf("team split %q: %w", s, err)
	}
	return sp, nil
}

// Check reports why the split cannot be made, or nil.
func (sp TeamSplit) Check() error {
	switch {
	case sp.Kind != SplitEqual && sp.Kind != SplitSkewed:
		return fmt.Errorf("unknown kind %q (known: %s, %s)", sp.Kind, SplitEqual, SplitSkewed)
	case sp.N < 1 || sp.N > MaxSplitTeams:
		return fmt.Errorf("%d teams: want 1 to %d", sp.N, MaxSplitTeams)
	case sp.Kind == SplitSkewed && sp.N < 2:
		return fmt.Errorf("%s needs at least 2 teams", SplitSkewed)
	}
	return nil
}

// Teams returns the names of the split's teams, team-1 to team-N.
func (sp TeamSplit) Teams() []string {
	out := make([]string, sp.N)
	for i := range out {
		out[i] = TeamName(i)
	}
	return out
}

// TeamName is the name of a split's i-th team (from 0): team-(i+1).
func TeamName(i int) string { return "team-" + strconv.Itoa(i+1) }

// Apply sets every job's team, replacing any the workload gave, dealing
// the jobs in their order (Sort's: by submission) so that each team's
// jobs arrive spread over the whole trace. jobs is changed in place.
func (sp TeamSplit) Apply(jobs []Job) {
	for i := range jobs {
		k := i % sp.N
		if sp.Kind == SplitSkewed {
			k = 0
			if i%2 == 1 {
				k = 1 + (i/2)%(sp.N-1)
			}
		}
		jobs[i].Team = TeamName(k)
	}
}
