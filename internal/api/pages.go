package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// Pages of GET /api/v1/jobs, as Kubernetes pages its lists: limit asks
// for at most that many jobs, and an answer with more to come carries
// metadata.continue, which the next request sends back.
const (
	// DefaultListLimit is the page size of a list that asks none: large
	// enough that a team's live jobs come in one page, small enough that
	// a page of finished jobs is a few hundred kilobytes.
	DefaultListLimit = 500
	// MaxListLimit is the largest limit taken; a larger one is a 400.
	MaxListLimit = 5000
	// ContinueTTL is how long a continue token is taken after it was
	// issued; an older one is 410 Gone.
	ContinueTTL = 15 * time.Minute
)

// maxListScan bounds the records one request reads from the store, so
// that a filter the store cannot apply (status, namespace, what the
// caller may see) matching few jobs does not read every job in one
// request: the page then ends early, shorter than its limit, with a
// continue token.
const maxListScan = 10000

// minListChunk is the fewest records read from the store at a time, so
// that a small limit with a selective filter does not read one record a
// call.
const minListChunk = 100

// maxContinueLen bounds a continue token's text, far above what the
// server issues (a job's name is at most a few hundred bytes), so that
// decoding one costs little whatever a client sends.
const maxContinueLen = 4096

// continueVersion is the version of the tokens this server issues; a
// token of another version (a server before or after an upgrade) is
// expired, and the client lists again.
const continueVersion = 1

// listQuery is what selects a list's jobs: the filters of
// GET /api/v1/jobs. A continue token carries the query of the page that
// issued it.
type listQuery struct {
	GPUType   string `json:"gpuType,omitempty"`
	Status    string `json:"status,omitempty"`
	Live      bool   `json:"live,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// String is the query as its parameters, for messages.
func (q listQuery) String() string {
	return fmt.Sprintf("gpuType=%q status=%q live=%t namespace=%q", q.GPUType, q.Status, q.Live, q.Namespace)
}

// storeOptions are the store's share of q: the GPU type, and only live
// jobs when q asks for them or for a status only live jobs have.
func (q listQuery) storeOptions() store.ListOptions {
	live := q.Live
	switch model.Status(q.Status) {
	case model.StatusSubmitted, model.StatusWaiting, model.StatusRunning:
		live = true
	}
	return store.ListOptions{GPUType: q.GPUType, Live: live}
}

// continueToken is the content of metadata.continue: where the next page
// starts (the store position of the last record the page read), the
// query it lists and when it was issued, as base64url of JSON.
//
// It is not signed. It grants nothing: each page applies the request's
// filters and the caller's rights afresh and reads at most maxListScan
// records, so a forged token can only start a list at another place,
// which the caller could reach by paging anyway, or keep a token from
// expiring, which only weakens the promise a client gets (see
// ContinueTTL). Without a key, any API replica takes any replica's
// tokens.
type continueToken struct {
	Version int `json:"v"`
	// Issued is the API's wall clock (NameClock) when it issued the
	// token, not the scheduler's clock, which a simulated cluster runs
	// faster.
	Issued     time.Time `json:"issued"`
	SubmitTime time.Time `json:"submitTime"`
	Name       string    `json:"name"`
	Query      listQuery `json:"query"`
}

// errMalformed: a continue token the server did not issue.
var errMalformed = errors.New("not a continue token this server issued")

// encodeContinue is the text of t. Only a time outside years 0-9999
// fails, and the store keeps none (its times fit int64 nanoseconds).
func encodeContinue(t continueToken) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("encode a continue token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// parseContinue reads a continue token's text. Every error wraps
// errMalformed; it says nothing of the version or the age, which the
// caller checks.
func parseContinue(s string) (continueToken, error) {
	var t continueToken
	if len(s) > maxContinueLen {
		return t, fmt.Errorf("%w: longer than %d bytes", errMalformed, maxContinueLen)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, fmt.Errorf("%w: %v", errMalformed, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return continueToken{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return continueToken{}, fmt.Errorf("%w: trailing data", errMalformed)
	}
	if t.Name == "" || t.Issued.IsZero() {
		return continueToken{}, fmt.Errorf("%w: no position or issue time", errMalformed)
	}
	return t, nil
}

// listRequest reads the query parameters of GET /api/v1/jobs: the
// filters, the limit and where the page starts.
func (s *Server) listRequest(r *http.Request) (q listQuery, limit int, after store.Position, err error) {
	params := r.URL.Query()
	q = listQuery{GPUType: params.Get("gpuType"), Status: params.Get("status"), Namespace: params.Get("namespace")}
	if v := params.Get("live"); v != "" {
		live, err := strconv.ParseBool(v)
		if err != nil {
			return q, 0, after, badRequest("live", fmt.Sprintf("live: %q is not a boolean", v))
		}
		q.Live = live
	}
	if q.Status != "" && !Status(q.Status).Valid() {
		return q, 0, after, badRequest("status",
			fmt.Sprintf("status: %q is not one of Submitted, Waiting, Running, Completed, Failed, Canceled", q.Status))
	}
	limit = DefaultListLimit
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			return q, 0, after, badRequest("limit",
				fmt.Sprintf("limit: %q is not a whole number from 1 to %d (default %d)", v, MaxListLimit, DefaultListLimit))
		}
		limit = n
	}
	v := params.Get("continue")
	if v == "" {
		return q, limit, after, nil
	}
	t, err := parseContinue(v)
	if err != nil {
		return q, 0, after, badRequest("continue",
			fmt.Sprintf("continue: %v; send back the metadata.continue of the previous page as it came", err))
	}
	now := s.cfg.NameClock.Now()
	switch {
	case t.Version != continueVersion:
		return q, 0, after, newError(http.StatusGone, ReasonExpired, "continue",
			"continue: the token was issued by another version of the server; list again from the first page (without continue)")
	case now.Sub(t.Issued) > ContinueTTL:
		return q, 0, after, newError(http.StatusGone, ReasonExpired, "continue",
			fmt.Sprintf("continue: the token was issued at %s, more than %v ago; list again from the first page (without continue)",
				t.Issued.UTC().Format(time.RFC3339), ContinueTTL))
	case t.Query != q:
		return q, 0, after, badRequest("continue",
			fmt.Sprintf("continue: the token lists %s, this request %s; send the filters of the first page with its tokens", t.Query, q))
	}
	return q, limit, store.Position{SubmitTime: t.SubmitTime, Name: t.Name}, nil
}

// page reads the jobs of q the caller may see after position after, at
// most limit of them, in the store's order.
// It reads the store a chunk at a time, applying what the store cannot
// (status, namespace, the caller's rights) to each chunk, until the page
// is full, the list ends, or it read scan records (maxListScan). next is
// where the next page starts, nil when the list ended: the position of
// the last record read, so that records passed over are not read again
// and none is skipped.
func (s *Server) page(r *http.Request, q listQuery, limit int, after store.Position, scan int) (jobs []store.Job, next *store.Position, err error) {
	opts := q.storeOptions()
	opts.After = after
	scanned := 0
	for {
		opts.Limit = min(max(limit-len(jobs), minListChunk), scan-scanned)
		got, err := s.cfg.Store.ListJobs(r.Context(), opts)
		if err != nil {
			return nil, nil, err
		}
		seen, err := s.visible(r, got)
		if err != nil {
			return nil, nil, err
		}
		shown := make(map[string]bool, len(seen))
		for _, j := range seen {
			shown[j.Name] = true
		}
		for i, j := range got {
			if !shown[j.Name] || (q.Status != "" && string(statusOf(j)) != q.Status) ||
				(q.Namespace != "" && s.namespaceOf(j) != q.Namespace) {
				continue
			}
			if len(jobs) == limit {
				// One more match: the next page starts with it. (i > 0:
				// a chunk is read only while the page has room.)
				p := got[i-1].Position()
				return jobs, &p, nil
			}
			jobs = append(jobs, j)
		}
		scanned += len(got)
		if len(got) < opts.Limit {
			return jobs, nil, nil // the list ended
		}
		// A full page may have more after it, or none: the next page
		// says.
		p := got[len(got)-1].Position()
		if len(jobs) == limit || scanned >= scan {
			return jobs, &p, nil
		}
		opts.After = p
	}
}

// listJobs answers GET /api/v1/jobs: a page of the jobs the caller may
// see, with the token of the next page.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	q, limit, after, err := s.listRequest(r)
	if err != nil {
		return err
	}
	jobs, next, err := s.page(r, q, limit, after, maxListScan)
	if err != nil {
		return err
	}
	views, err := s.views(r, jobs)
	if err != nil {
		return err
	}
	out := JobList{Items: views}
	if next != nil {
		out.Metadata.Continue, err = encodeContinue(continueToken{Version: continueVersion, Issued: s.cfg.NameClock.Now(),
			SubmitTime: next.SubmitTime, Name: next.Name, Query: q})
		if err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
