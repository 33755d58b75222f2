package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/eventhub"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/store"
)

const teamsPath = "/api/v1/schedulers/v100/teams"

// teamList reads GET .../teams as token.
func (f *fixture) teamList(token string) TeamList {
	f.t.Helper()
	code, _, _, b := f.as(token, "GET", teamsPath, "", "")
	var l TeamList
	if code != http.StatusOK || json.Unmarshal(b, &l) != nil {
		f.t.Fatalf("GET %s: %d %s", teamsPath, code, b)
	}
	return l
}

func TestTeamQuotas(t *testing.T) {
	f := newFixture(t)
	// A team with live jobs and no quota shows with the default.
	if err := f.store.PutStatus(context.Background(), "v100", store.SchedulerStatus{GPUs: 16,
		Teams: []store.TeamState{{Team: "team-c", GPUs: 4, Entitled: 8, Demand: 4, Running: 1}}}); err != nil {
		t.Fatal(err)
	}
	l := f.teamList("")
	want := TeamList{GPUType: "v100", GPUs: 16, Default: TeamQuota{Weight: 1},
		Items: []Team{{Team: "team-c", Weight: 1, GPUsInUse: 4, Entitled: 8, Demand: 4, Running: 1}}}
	if fmt.Sprint(l) != fmt.Sprint(want) {
		t.Errorf("teams before any quota: %+v, want %+v", l, want)
	}
	for _, c := range []struct {
		name, method, path, body string
		wantCode                 int
		wantField, wantBody      string
	}{
		{"set, weight and limit omitted", "PUT", teamsPath + "/team-a", `{"guarantee": 8}`, 200, "",
			`{"team":"team-a","quota":true,"guarantee":8,"limit":0,"weight":1,`},
		{"replace", "PUT", teamsPath + "/team-a", `{"guarantee": 4, "limit": 16, "weight": 2.5}`, 200, "",
			`{"team":"team-a","quota":true,"guarantee":4,"limit":16,"weight":2.5,`},
		{"zero weight", "PUT", teamsPath + "/team-b", `{"weight": 0}`, 200, "", `"weight":0,`},
		{"a team with jobs", "PUT", teamsPath + "/team-c", `{"guarantee": 2, "limit": 4}`, 200, "",
			`{"team":"team-c","quota":true,"guarantee":2,"limit":4,"weight":1,"gpusInUse":4,"entitled":8,"demand":4,"running":1,"waiting":0}`},
		{"negative guarantee", "PUT", teamsPath + "/team-d", `{"guarantee": -1}`, 400, "guarantee", "guarantee -1"},
		{"limit below guarantee", "PUT", teamsPath + "/team-d", `{"guarantee": 8, "limit": 4}`, 400, "limit", "limit 4 below guarantee 8"},
		{"limit too large", "PUT", teamsPath + "/team-d", `{"limit": 2000000}`, 400, "limit", "limit 2000000"},
		{"negative weight", "PUT", teamsPath + "/team-d", `{"weight": -1}`, 400, "weight", "weight -1"},
		{"weight too large", "PUT", teamsPath + "/team-d", `{"weight": 1e7}`, 400, "weight", "weight 1e+07"},
		{"bad team name", "PUT", teamsPath + "/Team_D", `{"guarantee": 1}`, 400, "team", "want a namespace name"},
		{"unknown field", "PUT", teamsPath + "/team-d", `{"guarantee": 1, "max": 3}`, 400, "max", ""},
		{"key in another case", "PUT", teamsPath + "/team-d", `{"Guarantee": 1}`, 400, "Guarantee", ""},
		{"fractional guarantee", "PUT", teamsPath + "/team-d", `{"guarantee": 1.5}`, 400, "guarantee", ""},
		{"empty body", "PUT", teamsPath + "/team-d", ``, 400, "body", ""},
		{"unknown GPU type", "PUT", "/api/v1/schedulers/k80/teams/team-d", `{"guarantee": 1}`, 404, "gpuType", "no scheduler"},
		{"unknown GPU type, bad quota", "PUT", "/api/v1/schedulers/k80/teams/team-d", `{"guarantee": -1}`, 404, "gpuType", "no scheduler"},
		{"unknown GPU type, list", "GET", "/api/v1/schedulers/k80/teams", ``, 404, "gpuType", "no scheduler"},
		{"delete", "DELETE", teamsPath + "/team-b", ``, 204, "", ""},
		{"delete again", "DELETE", teamsPath + "/team-b", ``, 404, "team", `"team-b" has no quota on v100`},
		{"delete a team never set", "DELETE", teamsPath + "/team-x", ``, 404, "team", "has no quota"},
	} {
		code, _, e, b := f.as("", c.method, c.path, "application/json", c.body)
		got := e.Message
		if code < 300 {
			got = compact(t, b)
		}
		if code != c.wantCode || e.Field != c.wantField || !strings.Contains(got, c.wantBody) {
			t.Errorf("%s: %d %s; want %d, field %q, a body containing %s", c.name, code, b, c.wantCode, c.wantField, c.wantBody)
		}
	}
	rec, err := f.store.GetScheduler(context.Background(), "v100")
	wantQuotas := []model.Quota{{Team: "team-a", Guarantee: 4, Limit: 16, Weight: 2.5}, {Team: "team-c", Guarantee: 2, Limit: 4, Weight: 1}}
	if err != nil || fmt.Sprint(rec.Settings.Quotas) != fmt.Sprint(wantQuotas) {
		t.Errorf("stored quotas %+v (%v), want %+v", rec.Settings.Quotas, err, wantQuotas)
	}
	// Each change told the scheduler: four PUTs and a DELETE accepted.
	msgs := f.received("v100")
	if len(msgs) != 5 || msgs[0].Verb != queue.VerbSettings {
		t.Errorf("notifications %+v, want 5 settings", msgs)
	}
	l = f.teamList("")
	if len(l.Items) != 2 || !l.Items[0].Quota || l.Items[1].Team != "team-c" || l.Items[1].GPUsInUse != 4 {
		t.Errorf("teams after the changes: %+v", l.Items)
	}
}

// compact is b, JSON, without its spaces.
func compact(t *testing.T, b []byte) string {
	t.Helper()
	if len(b) == 0 {
		return ""
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out.String()
}

// A GPU type holds at most model.MaxQuotas quotas: a new team beyond is
// refused, a team already there may still change.
func TestTeamQuotasBounded(t *testing.T) {
	f := newFixture(t)
	quotas := make([]model.Quota, model.MaxQuotas)
	for i := range quotas {
		quotas[i] = model.Quota{Team: fmt.Sprintf("team-%05d", i), Weight: 1}
	}
	if err := f.store.PutSettings(context.Background(), "v100", store.Settings{Quotas: quotas}); err != nil {
		t.Fatal(err)
	}
	if code, _, e, b := f.as("", "PUT", teamsPath+"/team-new", "application/json", `{"guarantee": 1}`); code != http.StatusConflict || e.Field != "team" {
		t.Errorf("a quota beyond the most: %d %s, want 409", code, b)
	}
	if code, _, _, b := f.as("", "PUT", teamsPath+"/team-00042", "application/json", `{"guarantee": 1}`); code != http.StatusOK {
		t.Errorf("change a quota at the most: %d %s, want 200", code, b)
	}
}

// Concurrent changes of one GPU type's settings, quotas and algorithm
// alike, lose none of each other.
func TestTeamQuotasConcurrent(t *testing.T) {
	f := newFixture(t)
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, body := fmt.Sprintf("%s/team-%02d", teamsPath, i), `{"guarantee": 1}`
			if i%6 == 0 {
				path, body = "/api/v1/schedulers/v100/algorithm", `{"algorithm": "FIFO"}`
			}
			if code, b := f.do("PUT", path, "application/json", body); code != http.StatusOK {
				t.Errorf("PUT %s: %d %s", path, code, b)
			}
		}()
	}
	wg.Wait()
	rec, err := f.store.GetScheduler(context.Background(), "v100")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rec.Settings.Quotas), n-n/6; got != want || rec.Settings.Algorithm != "FIFO" {
		t.Errorf("stored %d quotas and algorithm %q, want %d and FIFO: %+v", got, rec.Settings.Algorithm, want, rec.Settings.Quotas)
	}
}

func TestTeamQuotasAuthorization(t *testing.T) {
	f := newAuthFixture(t)
	for _, c := range []struct {
		name, token, method, path, body string
		wantCode                        int
		wantMessage                     string
	}{
		{"anonymous lists", "", "GET", teamsPath, "", 401, "requires a bearer token"},
		{"anonymous sets", "", "PUT", teamsPath + "/team-a", `{"guarantee": 8}`, 401, "requires a bearer token"},
		{"anonymous deletes", "", "DELETE", teamsPath + "/team-a", "", 401, "requires a bearer token"},
		{"scraper lists", scrapeToken, "GET", teamsPath, "", 403, `user "prometheus" may not list teams: needs the user role`},
		{"user sets", userToken, "PUT", teamsPath + "/team-a", `{"guarantee": 8}`, 403,
			`user "alice" may not update teams team-a: needs the admin role: membership of group "voda:admins"`},
		{"user deletes", userToken, "DELETE", teamsPath + "/team-a", "", 403, `may not delete teams team-a: needs the admin role`},
		{"admin sets", adminToken, "PUT", teamsPath + "/team-a", `{"guarantee": 8}`, 200, ""},
		{"user lists", userToken, "GET", teamsPath, "", 200, ""},
		{"admin deletes", adminToken, "DELETE", teamsPath + "/team-a", "", 204, ""},
	} {
		code, _, e, b := f.as(c.token, c.method, c.path, "application/json", c.body)
		if code != c.wantCode || !strings.Contains(e.Message, c.wantMessage) {
			t.Errorf("%s: %d %s, want %d with a message containing %q", c.name, code, b, c.wantCode, c.wantMessage)
		}
	}
	if rec, err := f.store.GetScheduler(context.Background(), "v100"); err != nil || len(rec.Settings.Quotas) != 0 {
		t.Errorf("stored quotas %+v (%v), want none: the admin's deleted, the user's refused", rec.Settings.Quotas, err)
	}
}

// noTeams lets everyone do anything but read the teams.
type noTeams struct{}

func (noTeams) Authorize(_ context.Context, _ auth.User, a auth.Attributes) (bool, string, error) {
	return a.Resource != auth.ResourceTeams, "no teams", nil
}

// A scheduler's teams name namespaces: GET schedulers and the event
// stream show them only to a caller who may list teams.
func TestSchedulerTeamsNeedListTeams(t *testing.T) {
	tf, err := auth.ParseTokenFile([]byte(adminToken + ",root,0,voda:admins\n" + userToken + ",alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	byToken := authorizers{adminToken: auth.NewRoles("", ""), userToken: noTeams{}}
	f := streamed(t, func(c *Config) { c.Authenticator, c.Authorizer = tf, byToken })
	if code, _, _, b := f.as(adminToken, "PUT", teamsPath+"/team-a", "application/json", `{"guarantee": 8}`); code != http.StatusOK {
		t.Fatalf("set a quota: %d %s", code, b)
	}
	for _, c := range []struct {
		token string
		want  bool
	}{{adminToken, true}, {userToken, false}} {
		for _, path := range []string{RouteSchedulers, "/api/v1/schedulers/v100", "/api/v1/schedulers/v100/ratelimit"} {
			method, body := "GET", ""
			if strings.HasSuffix(path, "ratelimit") {
				if c.token != adminToken {
					continue // the user may not; noTeams lets it, but roles decide the admin
				}
				method, body = "PUT", `{"seconds": 5}`
			}
			code, _, _, b := f.as(c.token, method, path, "application/json", body)
			if got := strings.Contains(string(b), `"team-a"`); code != http.StatusOK || got != c.want {
				t.Errorf("%s %s as %s: %d, shows team-a %v, want %v: %s", method, path, c.token, code, got, c.want, b)
			}
		}
		s := openStream(t, f.url, c.token)
		snap := s.snapshot()
		if len(snap.Schedulers) != 1 || (len(snap.Schedulers[0].Teams) > 0) != c.want {
			t.Errorf("as %s: snapshot's schedulers %+v, want teams shown %v", c.token, snap.Schedulers, c.want)
		}
		// A change of the quotas is a scheduler event, with or without
		// the teams.
		guarantee := 9
		if c.token == userToken {
			guarantee = 10
		}
		if code, _, _, b := f.as(adminToken, "PUT", teamsPath+"/team-a", "application/json", fmt.Sprintf(`{"guarantee": %d}`, guarantee)); code != http.StatusOK {
			t.Fatalf("change a quota: %d %s", code, b)
		}
		ev := s.next("the scheduler's event", 2*time.Second, func(ev sse) bool { return ev.name == eventhub.EventScheduler })
		var sc Scheduler
		if err := json.Unmarshal([]byte(ev.data), &sc); err != nil || sc.GPUType != "v100" || (len(sc.Teams) > 0) != c.want {
			t.Errorf("as %s: scheduler event %s (%v), want teams shown %v", c.token, ev.data, err, c.want)
		}
		if c.want && sc.Teams[0].Guarantee != guarantee {
			t.Errorf("scheduler event's team %+v, want guarantee %d", sc.Teams[0], guarantee)
		}
	}
}

// authorizers picks an Authorizer by the caller's name in the token file
// of TestSchedulerTeamsNeedListTeams.
type authorizers map[string]auth.Authorizer

func (a authorizers) Authorize(ctx context.Context, u auth.User, at auth.Attributes) (bool, string, error) {
	tok := map[string]string{"root": adminToken, "alice": userToken}[u.Name]
	return a[tok].Authorize(ctx, u, at)
}
