package kube

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/test/vodatest"
)

// applyRoles applies deploy/roles.yaml (kubectl apply: again is no harm).
func applyRoles(t *testing.T) {
	t.Helper()
	if err := env.Apply(t.Context(), filepath.Join("..", "..", "deploy", "roles.yaml")); err != nil {
		t.Fatal(err)
	}
}

// bindRole binds ClusterRole role to subject: in ns with a RoleBinding,
// or cluster-wide with a ClusterRoleBinding when ns is empty.
func bindRole(t *testing.T, role, ns string, subject rbacv1.Subject) {
	t.Helper()
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	name := role + "-" + strings.ToLower(subject.Kind) + "-" + subject.Name
	var err error
	if ns == "" {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}
		_, err = env.Client.RbacV1().ClusterRoleBindings().Create(t.Context(), crb, metav1.CreateOptions{})
	} else {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}
		_, err = env.Client.RbacV1().RoleBindings(ns).Create(t.Context(), rb, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// withNamespace is a manifest with metadata.namespace set.
func withNamespace(t *testing.T, manifest []byte, ns string) []byte {
	t.Helper()
	out := strings.Replace(string(manifest), "metadata:\n  name: ", "metadata:\n  namespace: "+ns+"\n  name: ", 1)
	if out == string(manifest) {
		t.Fatal("the manifest changed shape; update withNamespace")
	}
	return []byte(out)
}

// wantStatus fails t unless err is an API error with code (or nil, for
// code 0).
func wantStatus(t *testing.T, what string, err error, code int) {
	t.Helper()
	var apiErr *client.APIError
	switch {
	case code == 0 && err != nil:
		t.Errorf("%s: %v, want success", what, err)
	case code == 0:
		t.Logf("%s: ok", what)
	case !errors.As(err, &apiErr) || apiErr.StatusCode != code:
		t.Errorf("%s: %v, want %d", what, err, code)
	default:
		t.Logf("%s: %d %s", what, code, apiErr.Message)
	}
}

// TestKubernetesAuth runs the binary with --authentication kubernetes on
// the control plane, with deploy/roles.yaml bound as an operator would:
// alice and ServiceAccount trainer may use Voda in team A's namespace,
// bob in team B's, carol is an admin. Voda asks the API server who each
// token is and what RBAC lets them do, with the scheduler's own
// ServiceAccount token only.
func TestKubernetesAuth(t *testing.T) {
	ctx := t.Context()
	const gpuType = "authz-gpu"
	c := newCluster(t, gpuType, 1, 8)
	teamA, teamB := c.ns, c.ns+"-b"
	if err := env.CreateNamespace(ctx, teamB); err != nil {
		t.Fatal(err)
	}
	bindJobRole(t, teamB)
	applyRoles(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: teamA}}
	sa, err := env.Client.CoreV1().ServiceAccounts(teamA).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bindRole(t, "voda-user", teamA, user("alice"))
	bindRole(t, "voda-user", teamA, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "trainer", Namespace: teamA})
	bindRole(t, "voda-user", teamB, user("bob"))
	bindRole(t, "voda-admin", "", user("carol"))

	srv := c.start("--job-namespaces", teamA+","+teamB, "--authentication", "kubernetes", "--authentication-cache-ttl", "1s")
	as := func(token string) *client.Client { return srv.Client(client.WithBearerToken(token)) }
	userClient := func(name string) *client.Client {
		tok, err := env.UserToken(name)
		if err != nil {
			t.Fatal(err)
		}
		return as(tok)
	}
	alice, bob, carol := userClient("alice"), userClient("bob"), userClient("carol")
	saToken, err := env.ServiceAccountToken(ctx, teamA, "trainer")
	if err != nil {
		t.Fatal(err)
	}
	trainer := as(saToken)
	job := func(name string) []byte { return mpiJob.manifest(name, gpuType, 1, 1, time.Hour) }

	// Authentication: no token, a token the cluster does not know, an
	// expired ServiceAccount token are 401; the same token unexpired is
	// not (so only the expiry made the difference).
	for _, tc := range []struct {
		name string
		c    *client.Client
		code int
	}{
		{"no token", as(""), 401},
		{"unknown token", as("not-a-token"), 401},
		{"expired ServiceAccount token", as(signServiceAccountToken(t, teamA, sa, time.Now().Add(-time.Minute))), 401},
		{"the same token unexpired", as(signServiceAccountToken(t, teamA, sa, time.Now().Add(time.Hour))), 0},
		{"a user's token", alice, 0},
	} {
		_, err := tc.c.ListSchedulers(ctx)
		wantStatus(t, tc.name+" lists the schedulers", err, tc.code)
	}

	// Authorization: RBAC on the job's kind in its namespace.
	mine := submit(t, alice, withNamespace(t, job("alice"), teamA))
	_, err = alice.CreateJob(ctx, withNamespace(t, job("alice"), teamB))
	wantStatus(t, "alice submits in team B's namespace", err, 403)
	theirs := submit(t, bob, withNamespace(t, job("bob"), teamB))
	bySA := submit(t, trainer, withNamespace(t, job("trainer"), teamA))
	noNamespace := submit(t, trainer, job("plain")) // --namespace: team A's

	_, err = alice.GetJob(ctx, theirs)
	wantStatus(t, "alice reads bob's job", err, 403)
	_, err = alice.DeleteJob(ctx, theirs)
	wantStatus(t, "alice deletes bob's job", err, 403)
	_, err = alice.SetPriority(ctx, theirs, 1)
	wantStatus(t, "alice re-prioritises bob's job", err, 403)
	_, err = alice.SetAlgorithm(ctx, gpuType, "FIFO", nil)
	wantStatus(t, "alice changes the algorithm", err, 403)
	_, err = alice.SetRateLimit(ctx, gpuType, 3)
	wantStatus(t, "alice changes the rate limit", err, 403)
	// Quotas: RBAC on teams.vodascheduler.io, which voda-user does not
	// grant (teams are cluster-scoped) and voda-admin does.
	_, err = as("").ListTeams(ctx, gpuType)
	wantStatus(t, "an anonymous caller lists the teams", err, 401)
	_, err = as("").SetQuota(ctx, gpuType, teamA, api.QuotaRequest{Guarantee: 8})
	wantStatus(t, "an anonymous caller sets a quota", err, 401)
	_, err = alice.SetQuota(ctx, gpuType, teamA, api.QuotaRequest{Guarantee: 8})
	wantStatus(t, "alice sets her team's quota", err, 403)
	_, err = alice.ListTeams(ctx, gpuType)
	wantStatus(t, "alice lists the teams", err, 403)
	_, err = carol.SetQuota(ctx, gpuType, teamA, api.QuotaRequest{Guarantee: 2, Limit: 4})
	wantStatus(t, "carol (admin) sets team A's quota", err, 0)
	err = alice.DeleteQuota(ctx, gpuType, teamA)
	wantStatus(t, "alice deletes her team's quota", err, 403)
	if l, err := carol.ListTeams(ctx, gpuType); err != nil || len(l.Items) == 0 || l.Items[0].Team != teamA || l.Items[0].Guarantee != 2 {
		t.Errorf("carol lists the teams: %+v, %v; want team A's quota", l, err)
	}
	// The schedulers' teams name namespaces: not shown to alice.
	if s, err := alice.GetScheduler(ctx, gpuType); err != nil || len(s.Teams) != 0 {
		t.Errorf("alice reads the scheduler: teams %+v, %v; want none shown", s.Teams, err)
	}
	if s, err := carol.GetScheduler(ctx, gpuType); err != nil || len(s.Teams) == 0 {
		t.Errorf("carol reads the scheduler: teams %+v, %v; want team A's", s.Teams, err)
	}
	err = carol.DeleteQuota(ctx, gpuType, teamA)
	wantStatus(t, "carol (admin) deletes team A's quota", err, 0)
	_, err = alice.SetPriority(ctx, bySA, 2)
	wantStatus(t, "alice re-prioritises her team's job", err, 0)
	_, err = carol.SetAlgorithm(ctx, gpuType, "FIFO", nil)
	wantStatus(t, "carol (admin) changes the algorithm", err, 0)
	_, err = carol.DeleteJob(ctx, theirs)
	wantStatus(t, "carol (admin) deletes bob's job", err, 0)
	if j, err := bob.GetJob(ctx, theirs); err != nil || !j.DeleteRequested {
		t.Errorf("bob's job after carol deleted it: %+v, %v", j, err)
	}
	if j, err := bob.GetJob(ctx, theirs); err == nil && j.Namespace != teamB {
		t.Errorf("bob's job is in %q, want %s", j.Namespace, teamB)
	}

	// Lists show what the caller may see.
	for _, tc := range []struct {
		name string
		c    *client.Client
		opts client.ListOptions
		want []string
	}{
		{"alice", alice, client.ListOptions{}, []string{mine, bySA, noNamespace}},
		{"the ServiceAccount", trainer, client.ListOptions{}, []string{mine, bySA, noNamespace}},
		{"bob", bob, client.ListOptions{}, []string{theirs}},
		{"carol", carol, client.ListOptions{}, []string{mine, theirs, bySA, noNamespace}},
		{"carol in team B's namespace", carol, client.ListOptions{Namespace: teamB}, []string{theirs}},
	} {
		jobs, err := tc.c.ListJobs(ctx, tc.opts)
		if err != nil {
			t.Fatalf("%s lists: %v", tc.name, err)
		}
		var got []string
		for _, j := range jobs {
			got = append(got, j.Name)
		}
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s lists %v, want %v", tc.name, got, tc.want)
		}
	}

	// Metrics are for admins and scrapers.
	for _, tc := range []struct {
		name, token string
		code        int
	}{
		{"alice", mustToken(t, "alice"), http.StatusForbidden},
		{"carol", mustToken(t, "carol"), http.StatusOK},
	} {
		if code := getWithToken(t, srv.URL()+"/metrics", tc.token); code != tc.code {
			t.Errorf("%s GET /metrics: %d, want %d", tc.name, code, tc.code)
		}
	}

	// Revoking alice's RoleBinding refuses her once the cache expires.
	if err := env.Client.RbacV1().RoleBindings(teamA).Delete(ctx, "voda-user-user-alice", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // --authentication-cache-ttl 1s
	_, err = alice.GetJob(ctx, mine)
	wantStatus(t, "alice reads her job after her RoleBinding was removed", err, 403)
	if !strings.Contains(srv.Logs(), `msg=authorized user=carol action="delete MPIJob jobs `) {
		t.Errorf("the log has no audit line of carol's changes:\n%s", lastLines(srv.Logs(), 20))
	}
}

func mustToken(t *testing.T, name string) string {
	t.Helper()
	tok, err := env.UserToken(name)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// getWithToken GETs url with a bearer token and returns the status.
func getWithToken(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// signServiceAccountToken is a token of ServiceAccount sa as the API
// server issues one, signed with the stack's ServiceAccount key (ES256),
// expiring at exp: a way to hold an expired token without waiting out
// TokenRequest's ten-minute minimum.
func signServiceAccountToken(t *testing.T, ns string, sa *corev1.ServiceAccount, exp time.Time) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.Dir, "pki", "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("sa.key: no PEM block")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	const issuer = "https://kubernetes.default.svc.cluster.local" // hack/cluster.sh's --service-account-issuer
	claims := map[string]any{
		"iss": issuer, "aud": []string{issuer},
		"sub": "system:serviceaccount:" + ns + ":" + sa.Name,
		"iat": exp.Add(-time.Hour).Unix(), "nbf": exp.Add(-time.Hour).Unix(), "exp": exp.Unix(),
		"kubernetes.io": map[string]any{
			"namespace":      ns,
			"serviceaccount": map[string]any{"name": sa.Name, "uid": string(sa.UID)},
		},
	}
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := enc(map[string]string{"alg": "ES256", "typ": "JWT"}) + "." + enc(claims)
	digest := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// authLoadSubmissions is the burst of test/e2e's load test, and
// authLoadRounds how many times each mode takes it, alternately, so that
// neither gains from going second.
const (
	authLoadSubmissions = 1000
	authLoadRounds      = 5
)

// TestLoadWithKubernetesAuth fires test/e2e's burst of concurrent
// submissions at a fresh server on a simulated cluster, without
// authentication and with --authentication kubernetes (every request
// carries a user's token that a TokenReview checks and a
// SubjectAccessReview authorizes, both cached), authLoadRounds times
// each. Every submission must be accepted; the rates are logged (the
// figure docs/security.md quotes), with each mode's median.
func TestLoadWithKubernetesAuth(t *testing.T) {
	applyRoles(t)
	ns := "t-auth-load"
	if err := env.CreateNamespace(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	bindRole(t, "voda-user", ns, user("bob"))
	manifest := withNamespace(t, mpiJob.manifest("burst", "v100", 1, 4, time.Hour), ns)
	bearer := http.Header{"Authorization": {"Bearer " + mustToken(t, "bob")}}
	modes := []struct {
		label  string
		args   []string
		header http.Header
		rates  []float64
	}{
		{label: "no authentication"},
		{label: "--authentication kubernetes", args: []string{"--authentication", "kubernetes", "--kubeconfig", schedulerKubeconfig(t)}, header: bearer},
	}
	report := func(line string) {
		t.Log(line)
		if f := os.Getenv("VODA_LOAD_REPORT"); f != "" {
			appendReport(t, f, line)
		}
	}
	reviewsBefore := reviewCounts(t)
	for round := range authLoadRounds {
		for i := range modes {
			m := &modes[i]
			srv := vodatest.StartServer(t, append([]string{"--sim-nodes", "v100=8x8", "--log-level", "warn", "--data-dir", t.TempDir()}, m.args...)...)
			burst := vodatest.SubmitBurst(t, srv.URL(), manifest, authLoadSubmissions, m.header)
			m.rates = append(m.rates, burst.Rate())
			report(fmt.Sprintf("round %d, %s", round+1, burst.Report(m.label)))
			srv.Stop()
		}
	}
	for _, m := range modes {
		slices.Sort(m.rates)
		report(fmt.Sprintf("%s: median %.0f jobs/s over %d rounds of %d submissions", m.label, m.rates[len(m.rates)/2], authLoadRounds, authLoadSubmissions))
	}
	// The caches and the coalescing of concurrent reviews at work: a
	// burst with one token and one question costs about one review of
	// each, not a thousand.
	after := reviewCounts(t)
	for _, resource := range []string{"tokenreviews", "subjectaccessreviews"} {
		n := after[resource] - reviewsBefore[resource]
		report(fmt.Sprintf("%s created during the %d authenticated bursts: %d", resource, authLoadRounds, n))
		if n < authLoadRounds || n > 3*authLoadRounds {
			t.Errorf("%d %s for %d bursts of %d requests, want about one a burst", n, resource, authLoadRounds, authLoadSubmissions)
		}
	}
}

// reviewCounts reads the API server's own count of TokenReviews and
// SubjectAccessReviews created so far (apiserver_request_total).
func reviewCounts(t *testing.T) map[string]int {
	t.Helper()
	b, err := env.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="POST"`) {
			continue
		}
		for _, resource := range []string{"tokenreviews", "subjectaccessreviews"} {
			if !strings.Contains(line, `resource="`+resource+`"`) {
				continue
			}
			fields := strings.Fields(line)
			var n float64
			if _, err := fmt.Sscan(fields[len(fields)-1], &n); err != nil {
				t.Fatalf("apiserver metrics: %q: %v", line, err)
			}
			counts[resource] += int(n)
		}
	}
	return counts
}

func appendReport(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}
