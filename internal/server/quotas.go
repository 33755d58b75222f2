package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/strictjson"
)

// MaxQuotasFile bounds a --quotas-file: far more than model.MaxQuotas
// entries of every GPU type of a cluster take.
const MaxQuotasFile = 16 << 20

// quotaEntry is one entry of a --quotas-file.
type quotaEntry struct {
	GPUType   string   `json:"gpuType"`
	Team      string   `json:"team"`
	Guarantee int      `json:"guarantee"`
	Limit     int      `json:"limit"`
	Weight    *float64 `json:"weight"`
}

// ParseQuotas reads a --quotas-file: a YAML or JSON list of entries
// {gpuType, team, guarantee, limit, weight}, where guarantee and limit
// default to 0 (limit 0: no limit) and weight to 1. It returns each GPU
// type's quotas sorted by team. It is strict: an unknown or repeated key,
// a value of the wrong type or out of range, a team named twice for one
// GPU type, or more than model.MaxQuotas quotas of one GPU type is an
// error naming the entry (from 0) and the field.
func ParseQuotas(data []byte) (map[string][]model.Quota, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, errors.New("want a list of quotas, each {gpuType, team, guarantee, limit, weight}")
	}
	out := map[string][]model.Quota{}
	for i, r := range raw {
		var e quotaEntry
		if ferr := strictjson.Decode(r, &e); ferr != nil {
			return nil, fmt.Errorf("entry %d: field %s: %s", i, ferr.Field, ferr.Reason)
		}
		if e.GPUType == "" {
			return nil, fmt.Errorf("entry %d: field gpuType: required", i)
		}
		q := model.Quota{Team: e.Team, Guarantee: e.Guarantee, Limit: e.Limit, Weight: model.DefaultQuota.Weight}
		if e.Weight != nil {
			q.Weight = *e.Weight
		}
		if field, err := api.QuotaError(q); err != nil {
			return nil, fmt.Errorf("entry %d (gpuType %s): field %s: %w", i, e.GPUType, field, err)
		}
		if _, found := slices.BinarySearchFunc(out[e.GPUType], q.Team, func(x model.Quota, t string) int {
			return strings.Compare(x.Team, t)
		}); found {
			return nil, fmt.Errorf("entry %d (gpuType %s): field team: %q is named twice", i, e.GPUType, q.Team)
		}
		quotas, err := api.PutQuota(out[e.GPUType], q)
		if err != nil {
			return nil, fmt.Errorf("entry %d (gpuType %s): %w", i, e.GPUType, err)
		}
		out[e.GPUType] = quotas
	}
	return out, nil
}

// readQuotas reads and parses a --quotas-file; nil when path is empty.
// An entry of a GPU type not among gpuTypes (when they are known) is an
// error: a typo would otherwise seed nothing, silently.
func readQuotas(path string, gpuTypes []string) (map[string][]model.Quota, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--quotas-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxQuotasFile+1))
	if err != nil {
		return nil, fmt.Errorf("--quotas-file: %w", err)
	}
	if len(data) > MaxQuotasFile {
		return nil, fmt.Errorf("--quotas-file %s: larger than %d bytes", path, MaxQuotasFile)
	}
	quotas, err := ParseQuotas(data)
	if err != nil {
		return nil, fmt.Errorf("--quotas-file %s: %w", path, err)
	}
	if len(gpuTypes) > 0 {
		for _, t := range slices.Sorted(maps.Keys(quotas)) {
			if !slices.Contains(gpuTypes, t) {
				return nil, fmt.Errorf("--quotas-file %s: gpuType %q: no scheduler for it (known: %v)", path, t, gpuTypes)
			}
		}
	}
	return quotas, nil
}

// seedQuotas writes each GPU type's quotas of a --quotas-file into its
// stored settings when they hold no quotas yet: the file seeds a new
// cluster, and the API owns the quotas afterwards. It runs before the
// schedulers and the API start.
func seedQuotas(ctx context.Context, st store.Store, quotas map[string][]model.Quota, log *slog.Logger) error {
	for _, t := range slices.Sorted(maps.Keys(quotas)) {
		rec, err := st.GetScheduler(ctx, t)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return fmt.Errorf("--quotas-file: read the settings of %s: %w", t, err)
		case len(rec.Settings.Quotas) > 0:
			log.Info("quotas not seeded: the GPU type has quotas already, which the API owns", "gpuType", t, "stored", len(rec.Settings.Quotas))
			continue
		}
		rec.Settings.Quotas = quotas[t]
		if err := st.PutSettings(ctx, t, rec.Settings); err != nil {
			return fmt.Errorf("--quotas-file: store the quotas of %s: %w", t, err)
		}
		log.Info("quotas seeded from --quotas-file", "gpuType", t, "quotas", len(quotas[t]))
	}
	return nil
}
