package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/vodascheduler/voda/internal/api"
)

// DefaultTimeout bounds one request when New is given no *http.Client.
const DefaultTimeout = 30 * time.Second

// Size limits of the bodies the client reads: a success answer (a job
// list can be long) and an error answer (only its message is shown).
const (
	maxBody      = 64 << 20
	maxErrorBody = 64 << 10
)

// Client talks to one Voda server. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	hc    *http.Client
	token string // sent as a bearer token when not empty
	// warn, when not nil, gets the text of every warning of every answer.
	warn func(text string)
}

// New returns a client of the server at baseURL: "host:port",
// "http://host:port" or "https://host:port", optionally with a path prefix
// when the API sits behind a proxy ("https://gw.example.com/voda"). hc nil
// means an http.Client with DefaultTimeout. opts add credentials and
// trust (WithBearerToken, WithCAFile).
func New(baseURL string, hc *http.Client, opts ...Option) (*Client, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	c := &Client{base: base, hc: hc}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func parseBaseURL(s string) (*url.URL, error) {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return nil, errors.New("server address is empty")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("server address %q: %w", s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("server address %q: scheme %q is not http or https", s, u.Scheme)
	case u.Hostname() == "":
		return nil, fmt.Errorf("server address %q has no host", s)
	case u.User != nil:
		return nil, fmt.Errorf("server address %q: user information is not supported", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("server address %q: a query or fragment is not allowed", s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// WithWarningHandler returns a copy of c that calls handle, before a
// method returns, with the text of each warning the server's answer
// carried: each Warning header with warn-code 299, in the format
// kube-apiserver writes (`299 - "unknown field \"spec.slotsPerWorkr\""`),
// whatever the answer's status. The server warns of a manifest's unknown
// fields, which it accepts and ignores. handle nil ignores warnings, as a
// Client does by default.
func (c *Client) WithWarningHandler(handle func(text string)) *Client {
	cp := *c
	cp.warn = handle
	return &cp
}

// BaseURL is the server's address as the client uses it, e.g.
// "http://127.0.0.1:55587".
func (c *Client) BaseURL() string { return c.base.String() }

// CreateJob submits a job manifest (an MPIJob or PyTorchJob in YAML or
// JSON) and returns the job as created, under the unique name the server
// gave it.
func (c *Client) CreateJob(ctx context.Context, manifest []byte) (api.Job, error) {
	var job api.Job
	if len(bytes.TrimSpace(manifest)) == 0 {
		return job, errors.New("create job: the manifest is empty")
	}
	err := c.do(ctx, http.MethodPost, api.RouteJobs, nil, manifest, manifestType(manifest), &job)
	return job, err
}

// ErrNoDryRun is returned (wrapped) by ValidateJob when the server does
// not know dry runs: an older server, which created the job instead.
var ErrNoDryRun = errors.New("the server does not support dry runs")

// ValidateJob asks the server to validate a manifest exactly as CreateJob
// would, with the server's GPU types, models and limits, and to create
// nothing (POST /api/v1/jobs?dryRun=All). It returns the job as it would
// be created now. An invalid manifest is an *APIError naming the field.
// A server without dry runs creates the job; ValidateJob then returns the
// job and an error wrapping ErrNoDryRun that names it.
func (c *Client) ValidateJob(ctx context.Context, manifest []byte) (api.Job, error) {
	var job api.Job
	if len(bytes.TrimSpace(manifest)) == 0 {
		return job, errors.New("validate job: the manifest is empty")
	}
	q := url.Values{"dryRun": {"All"}}
	code, err := c.doStatus(ctx, http.MethodPost, api.RouteJobs, q, manifest, manifestType(manifest), &job)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("validate job: %w (it answered %d): it created job %s", ErrNoDryRun, code, job.Name)
	}
	return job, err
}

// manifestType is the Content-Type of a manifest: JSON when it parses as
// JSON (a YAML flow mapping that is also JSON is sent as JSON, which means
// the same), YAML otherwise.
func manifestType(manifest []byte) string {
	if json.Valid(manifest) {
		return "application/json"
	}
	return "application/yaml"
}

// ListOptions filter ListJobs; the zero value lists every job.
type ListOptions struct {
	// GPUType keeps the jobs of one GPU type.
	GPUType string
	// Status keeps the jobs in one status (Submitted, Waiting, Running,
	// Completed, Failed or Canceled).
	Status api.Status
	// Live keeps the jobs that have not finished.
	Live bool
	// Namespace keeps the jobs of one namespace.
	Namespace string
	// PageSize is how many jobs ListJobs asks for per request, from 1 to
	// api.MaxListLimit; 0 means the server's default (api.DefaultListLimit).
	PageSize int
}

// ListJobs returns every job that matches opts, in submission order,
// reading the server's list page by page (GET /api/v1/jobs with limit and
// continue). A job created or removed while it reads may be listed or
// not; none is listed twice or left out otherwise. A page that fails
// fails the whole list: a continue token that expired (after
// api.ContinueTTL) is an *APIError with StatusCode 410.
func (c *Client) ListJobs(ctx context.Context, opts ListOptions) ([]api.Job, error) {
	q := url.Values{}
	if opts.GPUType != "" {
		q.Set("gpuType", opts.GPUType)
	}
	if opts.Status != "" {
		q.Set("status", string(opts.Status))
	}
	if opts.Live {
		q.Set("live", "true")
	}
	if opts.Namespace != "" {
		q.Set("namespace", opts.Namespace)
	}
	if opts.PageSize != 0 {
		q.Set("limit", strconv.Itoa(opts.PageSize))
	}
	jobs := []api.Job{}
	for page := 1; ; page++ {
		var list api.JobList
		if err := c.do(ctx, http.MethodGet, api.RouteJobs, q, nil, "", &list); err != nil {
			if page > 1 {
				return nil, fmt.Errorf("list jobs, page %d: %w", page, err)
			}
			return nil, err
		}
		jobs = append(jobs, list.Items...)
		next := list.Metadata.Continue
		if next == "" {
			return jobs, nil
		}
		if next == q.Get("continue") {
			return nil, fmt.Errorf("list jobs, page %d: the server answered the continue token it was sent", page)
		}
		q.Set("continue", next)
	}
}

// GetJob returns one job.
func (c *Client) GetJob(ctx context.Context, name string) (api.Job, error) {
	return named[api.Job](ctx, c, http.MethodGet, api.RouteJob, "name", name, "job name", nil)
}

// DeleteJob deletes a job. A live job is halted by its scheduler: the
// job returned has DeleteRequested set, and becomes Canceled once halted;
// deleting it again while it is halted succeeds the same way. A finished
// job (Completed, Failed, Canceled) is removed from the server's store:
// the job returned is its last view, with its final status, and the
// server then answers 404 for it. Removed tells the two apart.
func (c *Client) DeleteJob(ctx context.Context, name string) (api.Job, error) {
	return named[api.Job](ctx, c, http.MethodDelete, api.RouteJob, "name", name, "job name", nil)
}

// Removed reports whether DeleteJob's answer j is a finished job it
// removed, rather than a live one being halted.
func Removed(j api.Job) bool { return j.Status.Done() }

// SetPriority changes a job's priority (0 is the highest).
func (c *Client) SetPriority(ctx context.Context, name string, priority int) (api.Job, error) {
	return named[api.Job](ctx, c, http.MethodPut, api.RouteJobPriority, "name", name, "job name", api.PriorityRequest{Priority: &priority})
}

// ListSchedulers returns the scheduler of every GPU type.
func (c *Client) ListSchedulers(ctx context.Context) ([]api.Scheduler, error) {
	var list api.SchedulerList
	err := c.do(ctx, http.MethodGet, api.RouteSchedulers, nil, nil, "", &list)
	return list.Items, err
}

// GetScheduler returns the scheduler of one GPU type.
func (c *Client) GetScheduler(ctx context.Context, gpuType string) (api.Scheduler, error) {
	return named[api.Scheduler](ctx, c, http.MethodGet, api.RouteScheduler, "gpuType", gpuType, "GPU type", nil)
}

// SetAlgorithm switches a GPU type's scheduler to another algorithm with
// the given parameters (nil for the algorithm's defaults).
func (c *Client) SetAlgorithm(ctx context.Context, gpuType, algorithm string, params map[string]string) (api.Scheduler, error) {
	return named[api.Scheduler](ctx, c, http.MethodPut, api.RouteAlgorithm, "gpuType", gpuType, "GPU type", api.AlgorithmRequest{Algorithm: algorithm, Params: params})
}

// SetRateLimit sets the least time between two scheduling cycles of a
// GPU type's scheduler.
func (c *Client) SetRateLimit(ctx context.Context, gpuType string, seconds float64) (api.Scheduler, error) {
	// An empty gpuType is reported first, by named.
	if gpuType != "" && (math.IsNaN(seconds) || math.IsInf(seconds, 0)) {
		return api.Scheduler{}, fmt.Errorf("set rate limit: %v seconds is not a number of seconds", seconds)
	}
	return named[api.Scheduler](ctx, c, http.MethodPut, api.RouteRateLimit, "gpuType", gpuType, "GPU type", api.RateLimitRequest{Seconds: &seconds})
}

// ListTeams returns a GPU type's teams (those with a quota or live jobs)
// and the default quota of the others.
func (c *Client) ListTeams(ctx context.Context, gpuType string) (api.TeamList, error) {
	return named[api.TeamList](ctx, c, http.MethodGet, api.RouteTeams, "gpuType", gpuType, "GPU type", nil)
}

// SetQuota creates or replaces a team's quota on a GPU type.
func (c *Client) SetQuota(ctx context.Context, gpuType, team string, q api.QuotaRequest) (api.Team, error) {
	pattern, err := teamPattern(gpuType, team)
	if err != nil {
		return api.Team{}, err
	}
	if q.Weight != nil && (math.IsNaN(*q.Weight) || math.IsInf(*q.Weight, 0)) {
		return api.Team{}, fmt.Errorf("set quota: weight %v is not a number", *q.Weight)
	}
	return named[api.Team](ctx, c, http.MethodPut, pattern, "gpuType", gpuType, "GPU type", q)
}

// DeleteQuota deletes a team's quota on a GPU type: the team has the
// default quota again.
func (c *Client) DeleteQuota(ctx context.Context, gpuType, team string) error {
	pattern, err := teamPattern(gpuType, team)
	if err != nil {
		return err
	}
	_, err = named[struct{}](ctx, c, http.MethodDelete, pattern, "gpuType", gpuType, "GPU type", nil)
	return err
}

// teamPattern is RouteTeam with the team filled in, for named to fill the
// GPU type; an empty team is an error (it would name the list).
func teamPattern(gpuType, team string) (string, error) {
	if gpuType == "" {
		return "", errors.New("the GPU type is empty")
	}
	if team == "" {
		return "", errors.New("the team is empty")
	}
	return strings.Replace(api.RouteTeam, "{team}", url.PathEscape(team), 1), nil
}

// ListAlgorithms returns the scheduling algorithms the server offers.
func (c *Client) ListAlgorithms(ctx context.Context) ([]api.Algorithm, error) {
	var list api.AlgorithmList
	err := c.do(ctx, http.MethodGet, api.RouteAlgorithms, nil, nil, "", &list)
	return list.Items, err
}

// named sends a request about one object: pattern with its {param}
// filled with value, a what that must not be empty (an empty path value
// would name another route), and req, unless nil, as the JSON body. It
// decodes the answer into a T. A request other than GET is sent as JSON
// even without a body (DELETE), as the API asks of every change.
func named[T any](ctx context.Context, c *Client, method, pattern, param, value, what string, req any) (T, error) {
	var out T
	if value == "" {
		return out, fmt.Errorf("the %s is empty", what)
	}
	var body []byte
	contentType := ""
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return out, err
		}
	}
	if req != nil || method != http.MethodGet {
		contentType = "application/json" // the API refuses a change sent as another type
	}
	path := strings.Replace(pattern, "{"+param+"}", url.PathEscape(value), 1)
	err := c.do(ctx, method, path, nil, body, contentType, &out)
	return out, err
}

// do sends one request and decodes a 2xx answer's JSON body into out.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string, out any) error {
	_, err := c.doStatus(ctx, method, path, query, body, contentType, out)
	return err
}

// doStatus is do, also returning the answer's status.
func (c *Client) doStatus(ctx context.Context, method, path string, query url.Values, body []byte, contentType string, out any) (int, error) {
	// path holds escaped values already, so it is appended as text.
	u := c.BaseURL() + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, c.connectionError(ctx, err)
	}
	defer resp.Body.Close()
	c.warnings(resp.Header)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return resp.StatusCode, newAPIError(resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, nil // a deletion answered with no body
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: the server's answer is not the expected JSON (%w): %s", method, path, err, snippet(b))
	}
	return resp.StatusCode, nil
}

// warnings hands the text of each warn-code 299 Warning header to the
// warning handler. Headers that do not parse are skipped: a warning is
// advice, and the answer stands without it.
func (c *Client) warnings(h http.Header) {
	if c.warn == nil {
		return
	}
	ws, _ := utilnet.ParseWarningHeaders(h.Values("Warning"))
	for _, w := range ws {
		if w.Code == 299 {
			c.warn(w.Text)
		}
	}
}

// connectionError explains a failed round trip; a canceled or expired
// context is reported as such, without the hint.
func (c *Client) connectionError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("request to the voda server at %s: %w", c.BaseURL(), ctxErr)
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	return &ConnectionError{Server: c.BaseURL(), Err: cause}
}

// snippet is a short, printable excerpt of a body for error messages.
func snippet(b []byte) string {
	const max = 200
	s := strings.TrimSpace(string(b))
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "?")
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "..."
	}
	return s
}
