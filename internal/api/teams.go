package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// listTeams serves GET .../teams: every team with a quota or live jobs,
// and the default quota of the others.
func (s *Server) listTeams(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.scheduler(r, r.PathValue("gpuType"))
	if err != nil {
		return err
	}
	d := model.DefaultQuota
	out := TeamList{GPUType: rec.GPUType, GPUs: rec.Status.GPUs,
		Default: TeamQuota{Guarantee: d.Guarantee, Limit: d.Limit, Weight: d.Weight}, Items: teamsView(rec)}
	if out.Items == nil {
		out.Items = []Team{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// setQuota serves PUT .../teams/{team}: it creates or replaces the team's
// quota and answers with the team as the list shows it.
func (s *Server) setQuota(w http.ResponseWriter, r *http.Request) error {
	var req QuotaRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	q := model.Quota{Team: r.PathValue("team"), Guarantee: req.Guarantee, Limit: req.Limit, Weight: model.DefaultQuota.Weight}
	if req.Weight != nil {
		q.Weight = *req.Weight
	}
	rec, err := s.updateSettings(r, r.PathValue("gpuType"), func(rec *store.Scheduler) error {
		// Checked here, after the GPU type, so that an unknown one is
		// a 404 whatever the body, as for the algorithm.
		if field, err := QuotaError(q); err != nil {
			return invalid(field, err.Error())
		}
		quotas, err := PutQuota(rec.Settings.Quotas, q)
		if err != nil {
			return newError(http.StatusConflict, ReasonConflict, "team", err.Error())
		}
		rec.Settings.Quotas = quotas
		return nil
	})
	if err != nil {
		return err
	}
	teams := teamsView(rec)
	i := slices.IndexFunc(teams, func(t Team) bool { return t.Team == q.Team })
	writeJSON(w, http.StatusOK, teams[i])
	return nil
}

// deleteQuota serves DELETE .../teams/{team}: the team has the default
// quota again. 404 when it had none.
func (s *Server) deleteQuota(w http.ResponseWriter, r *http.Request) error {
	team := r.PathValue("team")
	_, err := s.updateSettings(r, r.PathValue("gpuType"), func(rec *store.Scheduler) error {
		i, found := slices.BinarySearchFunc(rec.Settings.Quotas, team, func(q model.Quota, t string) int { return strings.Compare(q.Team, t) })
		if !found {
			return newError(http.StatusNotFound, ReasonNotFound, "team",
				fmt.Sprintf("team: %q has no quota on %s (it has the default)", team, rec.GPUType))
		}
		rec.Settings.Quotas = slices.Delete(slices.Clone(rec.Settings.Quotas), i, i+1)
		return nil
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// QuotaError reports why q cannot be stored, and the field at fault
// ("team", "guarantee", "limit" or "weight"); nil when it can.
// model.Quota.Validate says why; each field checked alone says which.
func QuotaError(q model.Quota) (field string, err error) {
	if err = q.Validate(); err == nil {
		return "", nil
	}
	d := model.DefaultQuota
	switch {
	case model.ValidTeam(q.Team) != nil:
		return "team", err
	case model.Quota{Team: q.Team, Guarantee: q.Guarantee, Weight: d.Weight}.Validate() != nil:
		return "guarantee", err
	case model.Quota{Team: q.Team, Weight: q.Weight}.Validate() != nil:
		return "weight", err
	}
	return "limit", err // out of range, or below the guarantee
}

// PutQuota returns quotas (sorted by team) with q in its place, replacing
// the team's quota if it had one. It refuses a new team beyond
// model.MaxQuotas. quotas is not modified.
func PutQuota(quotas []model.Quota, q model.Quota) ([]model.Quota, error) {
	out := slices.Clone(quotas)
	i, found := slices.BinarySearchFunc(out, q.Team, func(e model.Quota, t string) int { return strings.Compare(e.Team, t) })
	if found {
		out[i] = q
		return out, nil
	}
	if len(out) >= model.MaxQuotas {
		return nil, fmt.Errorf("team %q: the GPU type has %d quotas, the most it may; delete one first", q.Team, model.MaxQuotas)
	}
	return slices.Insert(out, i, q), nil
}

// showsTeams reports whether the request's caller may see the teams (list
// teams): they name namespaces.
func (s *Server) showsTeams(r *http.Request) bool {
	u, _ := auth.UserFrom(r.Context())
	return s.mayList(r.Context(), u, auth.ResourceTeams)
}

// callerView is a scheduler's view for the request's caller: without its
// teams unless the caller may list them.
func (s *Server) callerView(r *http.Request, rec store.Scheduler) Scheduler {
	v := s.schedulerView(rec)
	if !s.showsTeams(r) {
		v.Teams = nil
	}
	return v
}
