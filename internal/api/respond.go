package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/strictjson"
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing left to tell it
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text)
}

// warnCode is the warn-code of kube-apiserver's warnings (RFC 7234
// 5.5.7, "Miscellaneous Persistent Warning"), which kubectl prints.
const warnCode = 299

// addWarnings adds a Warning header per warning, as kube-apiserver
// writes them: 299 - "unknown field \"spec.slotsPerWorkr\"". jobspec
// bounds a manifest's warnings, in number and length.
func addWarnings(h http.Header, warnings []string) {
	for _, text := range warnings {
		v, err := utilnet.NewWarningHeader(warnCode, "-", text)
		if err != nil {
			continue // a control character; jobspec quotes what it reports, so none
		}
		h.Add("Warning", v)
	}
}

// maxBody bounds every request body: jobspec's limit on manifests.
const maxBody = jobspec.DefaultMaxBytes

// readBody reads a request body up to maxBody: a 413 error beyond it.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, tooLarge()
	case err != nil:
		return nil, badRequest("body", fmt.Sprintf("body: %v", err))
	}
	return body, nil
}

// manifestTypes are the Content-Types a manifest may come with; the body
// is sniffed either way (YAML is a superset of JSON). checkBrowser has
// already refused all but JSON and YAML on the v1 routes, and these from
// browsers on the legacy ones.
var manifestTypes = map[string]bool{
	"": true, "application/json": true, "application/yaml": true, "application/x-yaml": true,
	"text/yaml": true, "text/x-yaml": true, "text/plain": true, "application/octet-stream": true,
}

// formType is what curl sends with --data and --data-binary unless told
// otherwise; the original's POST /training took it, so the legacy route
// does.
const formType = "application/x-www-form-urlencoded"

// checkManifestType accepts the manifest types, and the form type when
// legacy is set.
func checkManifestType(r *http.Request, legacy bool) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !(manifestTypes[mt] || legacy && mt == formType) {
		return newError(http.StatusUnsupportedMediaType, ReasonUnsupportedMediaType, "Content-Type",
			fmt.Sprintf("Content-Type: %q is not a manifest type; send application/yaml or application/json", ct))
	}
	return nil
}

// decodeJSON reads a JSON request body into v, a pointer to a request
// struct, as strictly as the manifest parser reads a manifest (see
// strictjson.Decode); an error names the offending field.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if err := strictjson.Decode(body, v); err != nil {
		return badRequest(err.Field, err.Error())
	}
	return nil
}
