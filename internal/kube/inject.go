package kube

import (
	"strings"

	"github.com/vodascheduler/voda/internal/jobspec"
)

// What Voda adds to every container of a job's pods so that the job-side
// library (sdk/python) can report progress (docs/progress.md): where to,
// as which job, and a token that proves the report comes from the job's
// own pod.
const (
	EnvProgressURL = "VODA_PROGRESS_URL"
	EnvJobName     = "VODA_JOB_NAME"
	EnvTokenFile   = "VODA_TOKEN_FILE"

	// progressVolume is the projected volume of the pod's token for Voda;
	// progressMount is where containers find it.
	progressVolume = "vodascheduler-progress-token"
	progressMount  = "/var/run/secrets/vodascheduler.io"
	progressToken  = "token"
	// progressTokenSeconds is the token's lifetime; the kubelet renews it
	// before it expires, and the library re-reads the file every time.
	progressTokenSeconds = 3600
)

// DefaultProgressAudience is the audience of the pods' tokens for Voda:
// a token for Voda is no token for kube-apiserver, and the reverse.
const DefaultProgressAudience = "vodascheduler.io"

// Progress says where a job's pods send progress reports; the zero value
// injects nothing.
type Progress struct {
	// URL is Voda's API as the pods reach it, e.g.
	// http://voda.voda-system.svc:55587.
	URL string
	// Audience of the projected token (DefaultProgressAudience if empty).
	Audience string
}

// inject adds the progress environment, volume and mount to every pod
// template of obj (a job object about to be created), replacing whatever
// the manifest gave under the same names.
func (p Progress) inject(obj map[string]any, kind jobspec.Kind, job string) {
	if p.URL == "" {
		return
	}
	audience := p.Audience
	if audience == "" {
		audience = DefaultProgressAudience
	}
	env := map[string]string{
		EnvProgressURL: strings.TrimSuffix(p.URL, "/") + "/api/v1/jobs/" + job + "/progress",
		EnvJobName:     job,
		EnvTokenFile:   progressMount + "/" + progressToken,
	}
	specsKey := "pytorchReplicaSpecs"
	if kind == jobspec.KindMPIJob {
		specsKey = "mpiReplicaSpecs"
	}
	spec, _ := obj["spec"].(map[string]any)
	replicas, _ := spec[specsKey].(map[string]any)
	for _, r := range replicas {
		rs, ok := r.(map[string]any)
		if !ok {
			continue
		}
		pod := childMap(childMap(rs, "template"), "spec")
		pod["volumes"] = replaceNamed(pod["volumes"], map[string]any{
			"name": progressVolume,
			"projected": map[string]any{"sources": []any{map[string]any{"serviceAccountToken": map[string]any{
				"audience": audience, "expirationSeconds": int64(progressTokenSeconds), "path": progressToken,
			}}}},
		})
		containers, _ := pod["containers"].([]any)
		for _, c := range containers {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			for _, name := range []string{EnvProgressURL, EnvJobName, EnvTokenFile} {
				cm["env"] = replaceNamed(cm["env"], map[string]any{"name": name, "value": env[name]})
			}
			cm["volumeMounts"] = replaceNamedBy(cm["volumeMounts"], "mountPath",
				map[string]any{"name": progressVolume, "mountPath": progressMount, "readOnly": true})
		}
	}
}

// replaceNamed returns list with item in place of any entry of the same
// name, or appended.
func replaceNamed(list any, item map[string]any) []any {
	return replaceNamedBy(list, "name", item)
}

// replaceNamedBy is replaceNamed keyed by field key; entries matching
// item's name are dropped too, so a name is never given twice.
func replaceNamedBy(list any, key string, item map[string]any) []any {
	items, _ := list.([]any)
	out := make([]any, 0, len(items)+1)
	for _, it := range items {
		m, ok := it.(map[string]any)
		if ok && (m[key] == item[key] || m["name"] == item["name"]) {
			continue
		}
		out = append(out, it)
	}
	return append(out, item)
}
