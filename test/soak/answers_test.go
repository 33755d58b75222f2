package soak

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// What the soak's clients asked, by kind.
const (
	askSubmit   = "POST /api/v1/jobs"
	askList     = "GET /api/v1/jobs"
	askLive     = "GET /api/v1/jobs?live=true"
	askReport   = "POST /api/v1/jobs/{name}/progress"
	askEvents   = "GET /api/v1/events"
	askMetrics  = "GET /metrics"
	askListPage = "GET /api/v1/jobs (every page)"
)

// noAnswer is the code of a request that got no answer (a transport
// error or timeout).
const noAnswer = 0

// answers counts every answer the soak's clients got, by request kind and
// status code, and keeps the first few unexpected ones to say what they
// were.
type answers struct {
	mu     sync.Mutex
	counts map[string]map[int]int
	// allowed are the codes each kind may get; anything else is
	// unexpected.
	allowed    map[string][]int
	unexpected []string
}

func newAnswers() *answers {
	return &answers{counts: map[string]map[int]int{}, allowed: map[string][]int{
		askSubmit: {201},
		askList:   {200},
		askLive:   {200},
		// A job that finished (409) or was removed (404) between the
		// dashboard's view and the report; a job busy with its other
		// reports (429): docs/progress.md.
		askReport:   {200, 404, 409, 429},
		askEvents:   {200},
		askMetrics:  {200},
		askListPage: {200},
	}}
}

// maxUnexpected is how many unexpected answers are kept for the report.
const maxUnexpected = 20

// add counts one answer of kind; detail says what it was when it is not
// one kind may get.
func (a *answers) add(kind string, code int, detail string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.counts[kind] == nil {
		a.counts[kind] = map[int]int{}
	}
	a.counts[kind][code]++
	if !slices.Contains(a.allowed[kind], code) && len(a.unexpected) < maxUnexpected {
		a.unexpected = append(a.unexpected, fmt.Sprintf("%s: %d %.300s", kind, code, detail))
	}
}

// count is how many answers of kind had code.
func (a *answers) count(kind string, code int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.counts[kind][code]
}

// failures returns the answers no client may get: every 5xx, every
// request without an answer, and any code its kind does not allow;
// empty when there were none.
func (a *answers) failures() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, kind := range slices.Sorted(maps.Keys(a.counts)) {
		for _, code := range slices.Sorted(maps.Keys(a.counts[kind])) {
			if !slices.Contains(a.allowed[kind], code) {
				out = append(out, fmt.Sprintf("%s: %d answered %d", kind, a.counts[kind][code], code))
			}
		}
	}
	if len(out) > 0 {
		out = append(out, "first ones:")
		out = append(out, a.unexpected...)
	}
	return out
}

// String lists the answers by kind and code, for the report.
func (a *answers) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	for _, kind := range slices.Sorted(maps.Keys(a.counts)) {
		fmt.Fprintf(&b, "  %-36s", kind)
		for _, code := range slices.Sorted(maps.Keys(a.counts[kind])) {
			label := fmt.Sprint(code)
			if code == noAnswer {
				label = "no answer"
			}
			fmt.Fprintf(&b, " %s: %d", label, a.counts[kind][code])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
