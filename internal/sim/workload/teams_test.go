package workload

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTeamSplit(t *testing.T) {
	cases := []struct {
		in      string
		want    TeamSplit
		wantErr string
	}{
		{in: "equal:4", want: TeamSplit{Kind: SplitEqual, N: 4}},
		{in: " Skewed : 3 ", want: TeamSplit{Kind: SplitSkewed, N: 3}},
		{in: "equal:1", want: TeamSplit{Kind: SplitEqual, N: 1}},
		{in: "equal", wantErr: "want KIND:N"},
		{in: "fair:4", wantErr: `unknown kind "fair"`},
		{in: "equal:x", wantErr: `"x" is not a number`},
		{in: "equal:0", wantErr: "0 teams"},
		{in: "equal:65", wantErr: "65 teams"},
		{in: "skewed:1", wantErr: "at least 2"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTeamSplit(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestTeamSplitApply(t *testing.T) {
	cases := []struct {
		split TeamSplit
		want  map[string]int // jobs per team of 12
		order []string       // the first jobs' teams
	}{
		{split: TeamSplit{SplitEqual, 4}, want: map[string]int{"team-1": 3, "team-2": 3, "team-3": 3, "team-4": 3},
			order: []string{"team-1", "team-2", "team-3", "team-4", "team-1"}},
		{split: TeamSplit{SplitSkewed, 4}, want: map[string]int{"team-1": 6, "team-2": 2, "team-3": 2, "team-4": 2},
			order: []string{"team-1", "team-2", "team-1", "team-3", "team-1", "team-4", "team-1", "team-2"}},
		{split: TeamSplit{SplitSkewed, 2}, want: map[string]int{"team-1": 6, "team-2": 6},
			order: []string{"team-1", "team-2", "team-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.split.Kind, func(t *testing.T) {
			jobs := make([]Job, 12)
			for i := range jobs {
				jobs[i].Team = "old"
			}
			tc.split.Apply(jobs)
			got := map[string]int{}
			for _, j := range jobs {
				got[j.Team]++
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("jobs per team (-want,+got):\n%s", diff)
			}
			for i, team := range tc.order {
				if jobs[i].Team != team {
					t.Errorf("job %d: team %q, want %q", i, jobs[i].Team, team)
				}
			}
		})
	}
}

func FuzzParseTeamSplit(f *testing.F) {
	addSeeds(f, "equal:4", "skewed:2", "skewed:1", ":", "equal:-1", "equal:99999999999999999999")
	f.Fuzz(func(t *testing.T, in string) {
		sp, err := ParseTeamSplit(in)
		if err != nil {
			return
		}
		if err := sp.Check(); err != nil {
			t.Fatalf("accepted %q as %+v: %v", in, sp, err)
		}
		jobs := make([]Job, 7)
		sp.Apply(jobs)
		for _, j := range jobs {
			if j.Team == "" {
				t.Fatalf("%+v left a job without a team", sp)
			}
		}
	})
}
