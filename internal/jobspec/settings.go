package jobspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/vodascheduler/voda/internal/model"
)

// setting is one of Voda's per-job settings, in the order Parse checks
// them.
type setting int

const (
	settingMin setting = iota
	settingMax
	settingRequested
	settingEpochs
	settingPriority
	settingGPUType
	settingModel
	numSettings
)

var annotationOf = [numSettings]string{
	settingMin:       AnnotationMinWorkers,
	settingMax:       AnnotationMaxWorkers,
	settingRequested: AnnotationWorkers,
	settingEpochs:    AnnotationEpochs,
	settingPriority:  AnnotationPriority,
	settingGPUType:   AnnotationGPUType,
	settingModel:     AnnotationSimModel,
}

// source is one place a setting may be written.
type source struct {
	field   string
	raw     string
	present bool
	// numeric marks a JSON number field (replicas) rather than a string
	// (an env var, an annotation).
	numeric bool
	// err is why the field cannot be read (valueFrom, wrong type); it is
	// reported when the setting's turn comes.
	err *FieldError
}

// layout is where one kind of manifest keeps each setting.
type layout struct {
	// sources[s] lists where setting s may be written: the annotation
	// first (added by addAnnotations), then the kind's own fields.
	sources [numSettings][]source
	// hint says how to set a required setting that is missing.
	hint [numSettings]string
	// gpu is the Worker's GPU ask: Spec.WorkerGPUContainer and G.
	gpu workerAsk
}

func (l *layout) addAnnotations(a map[string]string) {
	for s := range numSettings {
		key := annotationOf[s]
		src := source{field: index("metadata.annotations", key)}
		if v, ok := a[key]; ok {
			src.raw, src.present = v, true
		}
		l.sources[s] = append([]source{src}, l.sources[s]...)
	}
}

// primary is where an absent setting is reported missing: the kind's own
// field if it has one, else the annotation.
func (l *layout) primary(s setting) *source {
	if len(l.sources[s]) > 1 {
		return &l.sources[s][1]
	}
	return &l.sources[s][0]
}

// field is where the setting was given, or its primary field.
func (l *layout) field(s setting) string {
	for _, src := range l.sources[s] {
		if src.present {
			return src.field
		}
	}
	return l.primary(s).field
}

func (l *layout) required(s setting) *FieldError {
	return &FieldError{Field: l.primary(s).field, Reason: "required; " + l.hint[s]}
}

// resolve checks the settings in order and builds the job spec (without
// its name) and the simulation model.
func (l *layout) resolve(opts Options) (model.JobSpec, string, *FieldError) {
	var js model.JobSpec

	minW, minSrc, err := l.intSetting(settingMin)
	if err != nil {
		return js, "", err
	}
	if minSrc == nil {
		return js, "", l.required(settingMin)
	}
	if minW < 1 {
		return js, "", minSrc.fail(fmt.Sprintf("%d must be at least 1", minW))
	}
	// --max-workers bounds a job's GPUs (its processes, which its
	// reports count): workers of G GPUs each may be MaxWorkers/G.
	g := max(l.gpu.gpus, 1)
	limit := opts.MaxWorkers / g
	if minW > limit {
		return js, "", aboveWorkerLimit(minW, minSrc, opts.MaxWorkers, g)
	}

	maxW, maxSrc, err := l.intSetting(settingMax)
	if err != nil {
		return js, "", err
	}
	if maxSrc == nil {
		return js, "", l.required(settingMax)
	}
	if maxW < 1 {
		return js, "", maxSrc.fail(fmt.Sprintf("%d must be at least 1", maxW))
	}
	if maxW > limit {
		return js, "", aboveWorkerLimit(maxW, maxSrc, opts.MaxWorkers, g)
	}
	if minW > maxW {
		return js, "", minSrc.fail(fmt.Sprintf("%d is above max workers %d (%s)", minW, maxW, maxSrc.field))
	}

	req, reqSrc, err := l.intSetting(settingRequested)
	if err != nil {
		return js, "", err
	}
	switch {
	case reqSrc == nil:
		req = minW
	case req > limit:
		// Outside [min, max] too; the limit is the clearer reason.
		return js, "", aboveWorkerLimit(req, reqSrc, opts.MaxWorkers, g)
	case req < minW || req > maxW:
		return js, "", reqSrc.fail(fmt.Sprintf("%d is outside [min, max] = [%d, %d]", req, minW, maxW))
	}

	epochs, epochSrc, err := l.intSetting(settingEpochs)
	if err != nil {
		return js, "", err
	}
	switch {
	case epochSrc == nil && opts.RequireEpochs:
		return js, "", l.required(settingEpochs)
	case epochSrc != nil && epochs < 1:
		why := fmt.Sprintf("%d must be at least 1", epochs)
		if !opts.RequireEpochs {
			why += "; leave it out when unknown"
		}
		return js, "", epochSrc.fail(why)
	}

	prio, prioSrc, err := l.intSetting(settingPriority)
	if err != nil {
		return js, "", err
	}
	if prioSrc != nil && (prio < 0 || prio > opts.MaxPriority) {
		return js, "", prioSrc.fail(fmt.Sprintf("%d is outside [0, %d]; 0 is the most urgent", prio, opts.MaxPriority))
	}

	gpu, gpuSrc, err := l.stringSetting(settingGPUType, checkGPUType)
	if err != nil {
		return js, "", err
	}
	if gpuSrc == nil {
		return js, "", l.required(settingGPUType)
	}
	if len(opts.GPUTypes) > 0 && !slices.Contains(opts.GPUTypes, gpu) {
		return js, "", gpuSrc.fail(fmt.Sprintf("unknown GPU type %s; this cluster has %s", quote(gpu), joinList(opts.GPUTypes)))
	}

	simModel, modelSrc, err := l.stringSetting(settingModel, nil)
	if err != nil {
		return js, "", err
	}
	if modelSrc != nil && len(opts.Models) > 0 && !slices.Contains(opts.Models, simModel) {
		return js, "", modelSrc.fail(fmt.Sprintf("unknown performance model %s; known: %s", quote(simModel), joinList(opts.Models)))
	}

	js = model.JobSpec{
		GPUType:          gpu,
		MinWorkers:       minW,
		MaxWorkers:       maxW,
		RequestedWorkers: req,
		Priority:         prio,
		Epochs:           epochs,
	}
	return js, simModel, nil
}

// aboveWorkerLimit rejects a worker count whose GPUs (n workers of g
// GPUs) are over Options.MaxWorkers. The scheduler and the cluster size
// per-job structures by these counts, so a job must not be able to ask
// for two billion workers.
func aboveWorkerLimit(n int, src *source, limit, g int) *FieldError {
	if g > 1 {
		return src.fail(fmt.Sprintf("%d workers of %d GPUs is above the limit of %d GPUs per job that this server accepts (voda server --max-workers): at most %d such workers", n, g, limit, limit/g))
	}
	return src.fail(fmt.Sprintf("%d is above the limit of %d workers (one GPU each) per job that this server accepts (voda server --max-workers)", n, limit))
}

func (src *source) fail(reason string) *FieldError {
	return &FieldError{Field: src.field, Value: src.raw, Reason: reason}
}

// intSetting reads an integer setting from all its sources: first every
// source's syntax, then their agreement. The source is nil when none
// gives the setting.
func (l *layout) intSetting(s setting) (int, *source, *FieldError) {
	srcs := l.sources[s]
	vals := make([]int, len(srcs))
	for i := range srcs {
		src := &srcs[i]
		if src.err != nil {
			return 0, nil, src.err
		}
		if !src.present {
			continue
		}
		v, reason := parseInt(src.raw, src.numeric)
		if reason != "" {
			return 0, nil, src.fail(reason)
		}
		vals[i] = v
	}
	ref := -1
	for i := range srcs {
		if !srcs[i].present {
			continue
		}
		if ref < 0 {
			ref = i
		} else if vals[i] != vals[ref] {
			return 0, nil, conflict(&srcs[ref], &srcs[i])
		}
	}
	if ref < 0 {
		return 0, nil, nil
	}
	return vals[ref], &srcs[ref], nil
}

// stringSetting is intSetting for a string setting; check, if not nil,
// returns why a value is malformed.
func (l *layout) stringSetting(s setting, check func(string) string) (string, *source, *FieldError) {
	srcs := l.sources[s]
	for i := range srcs {
		src := &srcs[i]
		if src.err != nil {
			return "", nil, src.err
		}
		if !src.present {
			continue
		}
		if src.raw == "" {
			return "", nil, src.fail("must not be empty")
		}
		if check != nil {
			if reason := check(src.raw); reason != "" {
				return "", nil, src.fail(reason)
			}
		}
	}
	var ref *source
	for i := range srcs {
		src := &srcs[i]
		if !src.present {
			continue
		}
		if ref == nil {
			ref = src
		} else if src.raw != ref.raw {
			return "", nil, conflict(ref, src)
		}
	}
	if ref == nil {
		return "", nil, nil
	}
	return ref.raw, ref, nil
}

func conflict(ref, other *source) *FieldError {
	return ref.fail(fmt.Sprintf("%s conflicts with %s = %s; give the setting once, or the same value in both",
		quote(ref.raw), other.field, quote(other.raw)))
}

// parseInt parses a base-10 32-bit integer; the reason is "" on success.
// A sign is allowed, so that "-1" is reported as out of range for the
// setting rather than as junk.
func parseInt(raw string, numeric bool) (int, string) {
	if raw == "" {
		return 0, "must not be empty"
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	switch {
	case err == nil:
		return int(n), ""
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Sprintf("%s is out of range for a 32-bit integer", quote(raw))
	case numeric:
		return 0, fmt.Sprintf("%s is not an integer", raw)
	}
	return 0, fmt.Sprintf("%s is not a base-10 integer", quote(raw))
}

func checkGPUType(s string) string {
	if isLabelValue(s) {
		return ""
	}
	return fmt.Sprintf("%s must be a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", quote(s))
}

// numberSource reads an integer field of the manifest (replicas) as a
// source.
func numberSource(obj map[string]any, key, path string) source {
	src := source{field: path, numeric: true}
	switch v := obj[key].(type) {
	case nil:
	case json.Number:
		src.raw, src.present = v.String(), true
	default:
		src.err = &FieldError{Field: path, Value: scalarText(v), Reason: "must be an integer, not " + typeName(v)}
	}
	return src
}
