package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/test/vodatest"
)

// monitoringDir holds the Helm chart's monitoring files: the Grafana
// dashboards and the Prometheus alert rules (docs/monitoring.md).
var monitoringDir = filepath.Join("..", "..", "deploy", "helm", "voda", "files")

// The parts of a Grafana dashboard the checks read.
type (
	dashboard struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []dashVariable `json:"list"`
		} `json:"templating"`
		Panels []dashPanel `json:"panels"`
	}
	dashVariable struct {
		Name       string          `json:"name"`
		Type       string          `json:"type"`
		Query      json.RawMessage `json:"query"`
		Datasource *dataSourceRef  `json:"datasource"`
	}
	dashPanel struct {
		ID         *int           `json:"id"`
		Type       string         `json:"type"`
		Title      string         `json:"title"`
		Datasource *dataSourceRef `json:"datasource"`
		GridPos    *struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Targets []struct {
			RefID      string         `json:"refId"`
			Expr       string         `json:"expr"`
			Datasource *dataSourceRef `json:"datasource"`
		} `json:"targets"`
		Panels []dashPanel `json:"panels"` // a collapsed row's
	}
	dataSourceRef struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
)

// ruleFile is a Prometheus rule file.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func loadDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(monitoringDir, "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", monitoringDir, err)
	}
	out := map[string]dashboard{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = d
	}
	return out
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(monitoringDir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(b, &rf); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	return rf
}

// allPanels flattens rows: their panels, collapsed or not, are panels.
func allPanels(ps []dashPanel) []dashPanel {
	var out []dashPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// query is a PromQL expression and where it comes from.
type query struct{ where, expr string }

// monitoringQueries are every dashboard target's and alert's expression.
func monitoringQueries(t *testing.T) []query {
	var out []query
	dashboards := loadDashboards(t)
	for _, name := range slices.Sorted(maps.Keys(dashboards)) {
		for _, p := range allPanels(dashboards[name].Panels) {
			for _, tg := range p.Targets {
				out = append(out, query{fmt.Sprintf("%s panel %q target %s", name, p.Title, tg.RefID), tg.Expr})
			}
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			out = append(out, query{"alert " + r.Alert, r.Expr})
		}
	}
	return out
}

// labelValuesQuery is a Grafana variable's label_values(metric, label).
var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

// variableQueries are the dashboards' label_values variables: the
// selector (as PromQL) and the label.
func variableQueries(t *testing.T) []query {
	var out []query
	dashboards := loadDashboards(t)
	for _, name := range slices.Sorted(maps.Keys(dashboards)) {
		for _, v := range dashboards[name].Templating.List {
			if v.Type != "query" {
				continue
			}
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Fatalf("%s variable %s: query: %v", name, v.Name, err)
			}
			m := labelValuesQuery.FindStringSubmatch(q.Query)
			if m == nil {
				t.Fatalf("%s variable %s: %q is not label_values(selector, label)", name, v.Name, q.Query)
			}
			out = append(out, query{name + " variable " + v.Name + " label " + m[2], m[1]})
		}
	}
	return out
}

// The dashboards are what Grafana imports: valid JSON with a stable uid,
// a recent schema, a datasource variable every query goes through (no
// data source UID written in), and panels with unique ids, a position and
// queries.
func TestDashboardsStructure(t *testing.T) {
	uids := map[string]string{}
	for name, d := range loadDashboards(t) {
		if d.UID == "" || len(d.UID) > 40 || d.Title == "" {
			t.Errorf("%s: uid %q title %q: want both, the uid at most 40 characters", name, d.UID, d.Title)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %q", name, other, d.UID)
		}
		uids[d.UID] = name
		if d.SchemaVersion < 36 {
			t.Errorf("%s: schemaVersion %d, want 36 or newer (data source references by uid)", name, d.SchemaVersion)
		}
		vars := map[string]dashVariable{}
		for _, v := range d.Templating.List {
			vars[v.Name] = v
		}
		ds, ok := vars["datasource"]
		if !ok || ds.Type != "datasource" || string(ds.Query) != `"prometheus"` {
			t.Errorf("%s: want a variable datasource of type datasource, query prometheus; have %+v", name, ds)
		}
		if gt, ok := vars["gpu_type"]; !ok || gt.Type != "query" {
			t.Errorf("%s: want a query variable gpu_type", name)
		}
		viaVariable := func(where string, r *dataSourceRef) {
			if r == nil || r.Type != "prometheus" || r.UID != "${datasource}" {
				t.Errorf("%s %s: data source %+v, want prometheus ${datasource}", name, where, r)
			}
		}
		for _, v := range d.Templating.List {
			if v.Type == "query" {
				viaVariable("variable "+v.Name, v.Datasource)
			}
		}
		ids := map[int]bool{}
		panels := allPanels(d.Panels)
		if len(panels) < 5 {
			t.Errorf("%s: %d panels", name, len(panels))
		}
		for _, p := range panels {
			where := fmt.Sprintf("panel %q", p.Title)
			switch {
			case p.ID == nil:
				t.Errorf("%s %s: no id", name, where)
			case ids[*p.ID]:
				t.Errorf("%s %s: id %d taken", name, where, *p.ID)
			default:
				ids[*p.ID] = true
			}
			if p.Title == "" || p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("%s %s: want a title and a gridPos within 24 columns; have %+v", name, where, p.GridPos)
			}
			if p.Type == "row" {
				continue
			}
			viaVariable(where, p.Datasource)
			if len(p.Targets) == 0 {
				t.Errorf("%s %s: no targets", name, where)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("%s %s: target %q: want an expression and a refId of its own", name, where, tg.RefID)
				}
				refs[tg.RefID] = true
				viaVariable(where+" target "+tg.RefID, tg.Datasource)
			}
		}
	}
}

// Every alert has what Alertmanager routes and people read: a severity,
// a summary, a description and a runbook in docs/monitoring.md.
func TestAlertRulesStructure(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || seen[r.Alert] {
				t.Errorf("group %s: alert %q: want a unique name", g.Name, r.Alert)
			}
			seen[r.Alert] = true
			if _, err := model.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no annotation %s", r.Alert, a)
				}
			}
			anchor := "docs/monitoring.md#" + strings.ToLower(r.Alert)
			if !strings.Contains(r.Annotations["runbook"], anchor) || !strings.Contains(string(doc), "### "+r.Alert+"\n") {
				t.Errorf("%s: want a runbook annotation naming %s and a section \"### %s\" there", r.Alert, anchor, r.Alert)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no alerts")
	}
}

// startMonitoredServer starts Voda on a small simulated cluster with jobs
// running (reporting their progress, through the route too) and one
// waiting, and waits until every metric the dashboards and alerts read is
// on /metrics.
func startMonitoredServer(t *testing.T) (*server, map[string]*dto.MetricFamily) {
	t.Helper()
	srv := startServer(t, "--sim-nodes", "v100=1x2", "--data-dir", t.TempDir(), "--speed", "60", "--log-level", "warn")
	names := submitAll(t, srv, 3, manifest("watched", 1, 1, 1000))
	var running []string
	waitFor(t, "two jobs running, one waiting", 60*time.Second, func() (bool, error) {
		list, err := srv.Client().ListJobs(ctxT(t), clientListAll)
		if err != nil {
			return false, err
		}
		running = running[:0]
		for _, j := range list {
			if j.Status == "Running" {
				running = append(running, j.Name)
			}
		}
		return len(running) == 2 && len(list) == len(names), nil
	})
	vodatest.FireReports(t, srv.URL(), running, 3, 100)
	var fams map[string]*dto.MetricFamily
	waitFor(t, "every metric the dashboards and alerts read", 120*time.Second, func() (bool, error) {
		var err error
		if fams, err = scrape(srv); err != nil {
			return false, err
		}
		if missing := missingMetrics(t, fams); len(missing) > 0 {
			return false, fmt.Errorf("missing: %s", strings.Join(missing, "; "))
		}
		return true, nil
	})
	return srv, fams
}

func scrape(srv *server) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(srv.URL() + api.RouteMetrics)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// missingMetrics checks every selector of every query against a scrape:
// the metric exists (a histogram's _bucket, _sum and _count count as its
// family's), and so does every label its matchers name.
func missingMetrics(t *testing.T, fams map[string]*dto.MetricFamily) []string {
	var missing []string
	for _, q := range slices.Concat(monitoringQueries(t), variableQueries(t)) {
		sels, err := promqlSelectors(q.expr)
		if err != nil {
			t.Fatalf("%s: %s: %v", q.where, q.expr, err)
		}
		if len(sels) == 0 {
			t.Fatalf("%s: %s reads no metric", q.where, q.expr)
		}
		for _, s := range sels {
			labels, ok := familyLabels(fams, s.Metric)
			if !ok {
				missing = append(missing, fmt.Sprintf("%s: metric %s", q.where, s.Metric))
				continue
			}
			for _, l := range s.Labels {
				if !labels[l] && !slices.Contains(targetLabels, l) {
					missing = append(missing, fmt.Sprintf("%s: label %s of %s", q.where, l, s.Metric))
				}
			}
		}
		if m := regexp.MustCompile(` label (\w+)$`).FindStringSubmatch(q.where); m != nil {
			if labels, _ := familyLabels(fams, sels[0].Metric); !labels[m[1]] {
				missing = append(missing, fmt.Sprintf("%s: label %s of %s", q.where, m[1], sels[0].Metric))
			}
		}
	}
	return missing
}

// familyLabels returns the label names a metric's samples carry, and
// whether the scrape has it.
func familyLabels(fams map[string]*dto.MetricFamily, name string) (map[string]bool, bool) {
	labels := func(f *dto.MetricFamily) map[string]bool {
		out := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				out[l.GetName()] = true
			}
		}
		return out
	}
	if f, ok := fams[name]; ok {
		return labels(f), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		f := fams[base]
		if !ok || f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		out := labels(f)
		if suffix == "_bucket" {
			out["le"] = true
		}
		return out, true
	}
	return nil, false
}

// TestMonitoring runs the dashboards and alerts against a running Voda:
// every metric and label they read is on its /metrics, promtool accepts
// the rules, and a real Prometheus scraping it loads them healthy and
// answers every dashboard query and variable, with data.
func TestMonitoring(t *testing.T) {
	srv, fams := startMonitoredServer(t)
	t.Logf("%d metric families on /metrics; every one the dashboards and alerts read is there", len(fams))

	promtool := lookTool(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", filepath.Join(monitoringDir, "alerts.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	t.Logf("promtool check rules: %s", strings.TrimSpace(string(out)))

	prom := startPrometheus(t, srv.Addr)
	waitFor(t, "Prometheus to evaluate every rule group at least twice after scraping Voda", 60*time.Second, func() (bool, error) {
		var up model.Vector
		if err := prom.query(`count_over_time(up{job="voda"}[1m]) >= 3 and up{job="voda"} == 1`, &up); err != nil || len(up) == 0 {
			return false, fmt.Errorf("Voda not scraped three times yet: %v", err)
		}
		groups, err := prom.rules()
		if err != nil {
			return false, err
		}
		for _, g := range groups {
			if g.LastEvaluation.Before(prom.started.Add(2 * time.Second)) {
				return false, fmt.Errorf("group %s last evaluated %v", g.Name, g.LastEvaluation)
			}
		}
		return true, nil
	})
	groups, err := prom.rules()
	if err != nil {
		t.Fatal(err)
	}
	loaded := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			loaded++
			if r.Health != "ok" || r.LastError != "" {
				t.Errorf("group %s rule %s: health %q, last error %q", g.Name, r.Name, r.Health, r.LastError)
			}
			// A healthy Voda with jobs waiting a little trips nothing.
			if r.State != "inactive" {
				t.Errorf("group %s alert %s is %s on a healthy Voda", g.Name, r.Name, r.State)
			}
		}
	}
	want := 0
	for _, g := range loadRules(t).Groups {
		want += len(g.Rules)
	}
	if loaded != want || len(groups) != len(loadRules(t).Groups) {
		t.Errorf("Prometheus loaded %d rules in %d groups, want %d in %d", loaded, len(groups), want, len(loadRules(t).Groups))
	}

	grafana := strings.NewReplacer("$gpu_type", "v100", "$job_name", ".*", "$__rate_interval", "1m", "$__interval", "15s", "$__range", "5m")
	// On a healthy Voda with jobs running, reporting and waiting, every
	// panel shows data but those of server errors, and no alert's
	// condition holds.
	for _, q := range monitoringQueries(t) {
		var res []json.RawMessage
		err := prom.query(grafana.Replace(q.expr), &res)
		alert := strings.HasPrefix(q.where, "alert ")
		switch {
		case err != nil:
			t.Errorf("%s: %v", q.where, err)
		case alert && len(res) > 0:
			t.Errorf("%s holds on a healthy Voda: %s", q.where, res)
		case !alert && len(res) == 0 && !strings.Contains(q.expr, `code=~"5.."`):
			t.Errorf("%s: %s answers nothing", q.where, grafana.Replace(q.expr))
		}
	}
	for _, q := range variableQueries(t) {
		label := q.where[strings.LastIndexByte(q.where, ' ')+1:]
		var values []string
		if err := prom.get("/api/v1/label/"+label+"/values?"+url.Values{"match[]": {grafana.Replace(q.expr)}}.Encode(), &values); err != nil {
			t.Errorf("%s: %v", q.where, err)
		} else if len(values) == 0 {
			t.Errorf("%s: no values", q.where)
		}
	}
}

// lookTool finds a command hack/test-deps.sh installs.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (Debian's prometheus package has it): run hack/test-deps.sh (make test does)", name)
	}
	return p
}

// prometheus is a Prometheus server the test started.
type prometheus struct {
	base    string
	started time.Time
}

// startPrometheus runs Debian's Prometheus on 127.0.0.1, scraping only
// target (Voda) every second and loading alerts.yaml, evaluated every
// second; nothing else: no alertmanager, remote storage or discovery.
func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	bin := lookTool(t, "prometheus")
	rules, err := filepath.Abs(filepath.Join(monitoringDir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: voda
    static_configs:
      - targets: [%q]
`, rules, target)
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(lookTool(t, "promtool"), "check", "config", config).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	addr := vodatest.FreeAddr(t)
	var logs strings.Builder
	cmd := exec.Command(bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	p := &prometheus{base: "http://" + addr, started: time.Now()}
	waitFor(t, "Prometheus ready", 30*time.Second, func() (bool, error) {
		select {
		case <-done:
			t.Fatalf("prometheus exited:\n%s", logs.String())
		default:
		}
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return p
}

// get reads one of Prometheus's API answers into data; an answer whose
// status is not success is an error.
func (p *prometheus) get(path string, data any) error {
	resp, err := http.Get(p.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status    string          `json:"status"`
		Error     string          `json:"error"`
		ErrorType string          `json:"errorType"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s: %d %.300s", path, resp.StatusCode, b)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s %s: %s", path, env.Status, env.ErrorType, env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

// query runs an instant query; into gets the result.
func (p *prometheus) query(expr string, into any) error {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get("/api/v1/query?"+url.Values{"query": {expr}}.Encode(), &data); err != nil {
		return fmt.Errorf("query %s: %w", expr, err)
	}
	return json.Unmarshal(data.Result, into)
}

type ruleGroup struct {
	Name           string    `json:"name"`
	LastEvaluation time.Time `json:"lastEvaluation"`
	Rules          []struct {
		Name      string `json:"name"`
		Health    string `json:"health"`
		LastError string `json:"lastError"`
		State     string `json:"state"`
	} `json:"rules"`
}

func (p *prometheus) rules() ([]ruleGroup, error) {
	var data struct {
		Groups []ruleGroup `json:"groups"`
	}
	err := p.get("/api/v1/rules", &data)
	return data.Groups, err
}

// Every alert fires on synthetic series when it should, with its
// annotations rendered, and not before or elsewhere: promtool test rules
// on testdata/alerts_test.yaml, which must make each alert fire at least
// once.
func TestAlertRules(t *testing.T) {
	const tests = "testdata/alerts_test.yaml"
	b, err := os.ReadFile(tests)
	if err != nil {
		t.Fatal(err)
	}
	var unit struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &unit); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range unit.Tests {
		for _, a := range tc.AlertRuleTest {
			fires[a.Alertname] = fires[a.Alertname] || len(a.ExpAlerts) > 0
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] {
				t.Errorf("%s: no case in %s where it fires", r.Alert, tests)
			}
		}
	}
	out, err := exec.Command(lookTool(t, "promtool"), "test", "rules", tests).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", tests, err, out)
	}
}
