package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

func TestParseQuotas(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       map[string][]model.Quota
		wantErr    string
	}{
		{name: "YAML, defaults, sorted by team", file: `
- {gpuType: v100, team: team-b, guarantee: 8, limit: 16}
- gpuType: v100
  team: team-a
  guarantee: 4
  weight: 2.5
- {gpuType: a100, team: team-a, weight: 0}
`, want: map[string][]model.Quota{
			"v100": {{Team: "team-a", Guarantee: 4, Weight: 2.5}, {Team: "team-b", Guarantee: 8, Limit: 16, Weight: 1}},
			"a100": {{Team: "team-a", Weight: 0}},
		}},
		{name: "JSON", file: `[{"gpuType": "v100", "team": "team-a", "guarantee": 2}]`,
			want: map[string][]model.Quota{"v100": {{Team: "team-a", Guarantee: 2, Weight: 1}}}},
		{name: "empty", file: "", want: map[string][]model.Quota{}},
		{name: "empty list", file: "[]", want: map[string][]model.Quota{}},
		{name: "not a list", file: "gpuType: v100\nteam: a\n", wantErr: "want a list of quotas"},
		{name: "unknown field", file: "- {gpuType: v100, team: team-a, max: 3}", wantErr: `entry 0: field max: `},
		{name: "a key in another case", file: "- {gpuType: v100, Team: team-a}", wantErr: "entry 0: field Team"},
		{name: "a key twice", file: "- {gpuType: v100, team: team-a, team: team-b}", wantErr: "not YAML or JSON"},
		{name: "a string guarantee", file: "- {gpuType: v100, team: team-a, guarantee: many}", wantErr: "entry 0: field guarantee"},
		{name: "a fractional limit", file: "- {gpuType: v100, team: team-a, limit: 1.5}", wantErr: "entry 0: field limit"},
		{name: "no GPU type", file: "- {team: team-a}", wantErr: "entry 0: field gpuType: required"},
		{name: "bad team", file: "- {gpuType: v100, team: ok}\n- {gpuType: v100, team: Team_A}", wantErr: "entry 1 (gpuType v100): field team: team \"Team_A\""},
		{name: "no team", file: "- {gpuType: v100}", wantErr: "entry 0 (gpuType v100): field team"},
		{name: "negative guarantee", file: "- {gpuType: v100, team: a, guarantee: -1}", wantErr: "field guarantee: team \"a\": guarantee -1"},
		{name: "limit below guarantee", file: "- {gpuType: v100, team: a, guarantee: 4, limit: 2}", wantErr: "field limit: team \"a\": limit 2 below guarantee 4"},
		{name: "weight too large", file: "- {gpuType: v100, team: a, weight: 1e9}", wantErr: "field weight"},
		{name: "a team twice", file: "- {gpuType: v100, team: a}\n- {gpuType: a100, team: a}\n- {gpuType: v100, team: a, guarantee: 1}",
			wantErr: `entry 2 (gpuType v100): field team: "a" is named twice`},
		{name: "an entry that is not an object", file: "- 3", wantErr: "entry 0: field body"},
	} {
		got, err := ParseQuotas([]byte(c.file))
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %+v, %v; want an error containing %q", c.name, got, err, c.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case fmt.Sprint(got) != fmt.Sprint(c.want):
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// More than model.MaxQuotas quotas of one GPU type are refused.
func TestParseQuotasBounded(t *testing.T) {
	var b strings.Builder
	for i := range model.MaxQuotas + 1 {
		fmt.Fprintf(&b, "- {gpuType: v100, team: t%05d}\n", i)
	}
	if _, err := ParseQuotas([]byte(b.String())); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("entry %d (gpuType v100)", model.MaxQuotas)) {
		t.Errorf("%d quotas: %v, want the last refused", model.MaxQuotas+1, err)
	}
}

func FuzzParseQuotas(f *testing.F) {
	for _, s := range []string{
		"- {gpuType: v100, team: team-a, guarantee: 8, limit: 16, weight: 1}",
		`[{"gpuType": "a", "team": "b", "weight": 0.5}, {"gpuType": "a", "team": "c"}]`,
		"", "[]", "- 3", "{}", "- {gpuType: v100, team: a, guarantee: 1e300}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		quotas, err := ParseQuotas(data)
		if err != nil {
			return
		}
		for gt, qs := range quotas {
			if gt == "" || len(qs) == 0 || len(qs) > model.MaxQuotas {
				t.Fatalf("GPU type %q with %d quotas", gt, len(qs))
			}
			if !slices.IsSortedFunc(qs, func(a, b model.Quota) int { return strings.Compare(a.Team, b.Team) }) {
				t.Fatalf("%s: quotas not sorted: %+v", gt, qs)
			}
			for i, q := range qs {
				if _, err := api.QuotaError(q); err != nil {
					t.Fatalf("%s: an invalid quota accepted: %+v: %v", gt, q, err)
				}
				if i > 0 && qs[i-1].Team == q.Team {
					t.Fatalf("%s: team %q twice", gt, q.Team)
				}
			}
		}
	})
}

// The file seeds GPU types whose settings hold no quotas, keeping their
// other settings, and leaves the others' quotas, which the API owns.
func TestSeedQuotas(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(ctx) })
	owned := []model.Quota{{Team: "team-z", Guarantee: 1, Weight: 1}}
	for gt, set := range map[string]store.Settings{
		"a100": {Algorithm: "FIFO"},               // settings, no quotas: seeded
		"k80":  {Quotas: owned},                   // quotas already: left alone
		"t4":   {Algorithm: "SRJF", RateLimit: 1}, // as a100
	} {
		if err := st.PutSettings(ctx, gt, set); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "quotas.yaml")
	file := "- {gpuType: a100, team: team-a, guarantee: 8}\n- {gpuType: k80, team: team-a, guarantee: 8}\n- {gpuType: v100, team: team-b, limit: 4}\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	quotas, err := readQuotas(path, []string{"a100", "k80", "t4", "v100"})
	if err != nil {
		t.Fatal(err)
	}
	if err := seedQuotas(ctx, st, quotas, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	want := map[string]store.Settings{
		"a100": {Algorithm: "FIFO", Quotas: []model.Quota{{Team: "team-a", Guarantee: 8, Weight: 1}}},
		"k80":  {Quotas: owned},
		"t4":   {Algorithm: "SRJF", RateLimit: 1},
		"v100": {Quotas: []model.Quota{{Team: "team-b", Limit: 4, Weight: 1}}}, // no record before
	}
	for gt, w := range want {
		rec, err := st.GetScheduler(ctx, gt)
		if err != nil || fmt.Sprint(rec.Settings) != fmt.Sprint(w) {
			t.Errorf("%s: settings %+v (%v), want %+v", gt, rec.Settings, err, w)
		}
	}
	if _, err := readQuotas(path, []string{"a100", "k80"}); err == nil || !strings.Contains(err.Error(), `gpuType "v100": no scheduler for it`) {
		t.Errorf("an unknown GPU type: %v", err)
	}
	if q, err := readQuotas(path, nil); err != nil || len(q) != 3 {
		t.Errorf("GPU types not known yet (Kubernetes discovers them): %v, %v; want every entry", q, err)
	}
	if _, err := readQuotas(filepath.Join(t.TempDir(), "none"), nil); err == nil || !strings.Contains(err.Error(), "--quotas-file") {
		t.Errorf("a missing file: %v", err)
	}
}
