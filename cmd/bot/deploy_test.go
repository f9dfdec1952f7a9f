package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	prommodel "github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// The files of deploy/ that name the bot's metrics.
const (
	alertRulesFile = "../../deploy/prometheus/alerts.yml"
	dashboardFile  = "../../deploy/grafana/countersign.json"
)

// ruleFile is a Prometheus rule file, as far as the alerts go.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// The alert rules are well formed, cover what needs a person (an unknown
// outcome, approvals near their expiry, Telegram's 429s, no leader), and name
// only metrics the bot exports; the dashboard names only those too, and shows
// each metric an alert fires on.
func TestDeployFilesNameExportedMetrics(t *testing.T) {
	exported := scrapeTestRegistry(t)
	alerts := alertExprs(t)
	for _, want := range []string{"CountersignUnknownOutcome", "CountersignApprovalsNearExpiry", "CountersignTelegram429", "CountersignNoLeader"} {
		if _, ok := alerts[want]; !ok {
			t.Errorf("%s has no alert %s", alertRulesFile, want)
		}
	}
	panels := dashboardExprs(t)
	shown := map[string]bool{}
	for _, expr := range panels {
		for _, name := range metricNames(expr) {
			shown[name] = true
			if !exports(exported, name) {
				t.Errorf("%s: %q names %s, which the bot does not export", dashboardFile, expr, name)
			}
		}
	}
	for alert, expr := range alerts {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: alert %s names no metric: %q", alertRulesFile, alert, expr)
		}
		for _, name := range names {
			if !exports(exported, name) {
				t.Errorf("%s: alert %s names %s, which the bot does not export", alertRulesFile, alert, name)
			}
			if !shown[name] {
				t.Errorf("%s: no panel shows %s, which alert %s fires on", dashboardFile, name, alert)
			}
		}
	}
}

// alertExprs reads the alert rules strictly (an unknown key is an error) and
// returns each alert's expression, failing for a rule without its name,
// expression, severity or summary, or with a malformed duration.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var rf ruleFile
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", alertRulesFile, err)
	}
	exprs := map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: rule %q of group %q lacks a name, an expression, a severity or a summary", alertRulesFile, r.Alert, g.Name)
			}
			if _, err := prommodel.ParseDuration(r.For); r.For != "" && err != nil {
				t.Errorf("%s: alert %s: for: %v", alertRulesFile, r.Alert, err)
			}
			if _, dup := exprs[r.Alert]; dup {
				t.Errorf("%s: alert %s twice", alertRulesFile, r.Alert)
			}
			exprs[r.Alert] = r.Expr
		}
	}
	if len(exprs) == 0 {
		t.Fatalf("%s: no alerts", alertRulesFile)
	}
	return exprs
}

// dashboardExprs returns the PromQL of every panel's query, nested in rows or
// not, and the metric of each label_values variable, as an expression.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && k == "expr" {
					exprs = append(exprs, s)
				}
				if s, ok := c.(string); ok && k == "query" {
					if m := labelValues.FindStringSubmatch(s); m != nil {
						exprs = append(exprs, m[1])
					}
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(dash["panels"])
	walk(dash["templating"])
	if len(exprs) == 0 {
		t.Fatalf("%s: no queries", dashboardFile)
	}
	return exprs
}

// labelValues is a Grafana variable's query of a label's values.
var labelValues = regexp.MustCompile(`^label_values\(\s*([^,]+?)\s*,`)

// exports reports whether the exposition has the series name: a family, or a
// histogram's _bucket, _sum or _count.
func exports(e exposition, name string) bool {
	if _, ok := e[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && e[base].GetType() == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}

// What metricNames takes out of an expression before it reads the names left.
var (
	promStrings   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	grafanaVars   = regexp.MustCompile(`\$\{?\w+\}?`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promToken     = regexp.MustCompile(`[a-zA-Z0-9_:.]+\s*\(?`)
	promOperators = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "atan2"}
)

// metricNames returns the metric names a PromQL expression reads, sorted: what
// is left once strings, Grafana's variables, label matchers, ranges, grouping
// clauses, functions, operators and numbers are taken out.
func metricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{promStrings, grafanaVars, promMatchers, promRanges, promGrouping} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, tok := range promToken.FindAllString(expr, -1) {
		if tok = strings.TrimSpace(tok); strings.HasSuffix(tok, "(") || tok[0] >= '0' && tok[0] <= '9' || tok[0] == '.' || slices.Contains(promOperators, strings.ToLower(tok)) {
			continue // a function or aggregation, a number or duration, an operator
		}
		names = append(names, tok)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// metricNames finds the metrics of the expressions that alert rules and
// dashboards write, and nothing else.
func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		name, expr string
		want       []string
	}{
		{"a bare metric", "go_goroutines", []string{"go_goroutines"}},
		{"matchers and a comparison", `max by (job) (countersign_operations{state="unknown", job=~"a|b"}) > 0`, []string{"countersign_operations"}},
		{"a range and a function", `sum by (job) (increase(countersign_telegram_429_total[10m])) > 0`, []string{"countersign_telegram_429_total"}},
		{"a quantile of buckets", `histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket{job="$job"}[$__rate_interval])))`, []string{"x_seconds_bucket"}},
		{"a join", `a{job="$job"} * on (job, instance) group_left (replica) b_info`, []string{"a", "b_info"}},
		{"set operators, offset and vector", `a and b unless c offset 5m or vector(0)`, []string{"a", "b", "c"}},
		{"absent, and a postfix grouping", `absent(up) or sum(a) without (instance)`, []string{"a", "up"}},
		{"strings with names in them", `label_replace(a, "dst", "$1", "src", "(countersign_.*)")`, []string{"a"}},
		{"a number with an exponent", `a > 1e3`, []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := metricNames(c.expr); !slices.Equal(got, c.want) {
				t.Errorf("metricNames(%q) = %q, want %q", c.expr, got, c.want)
			}
		})
	}
}

// The sample systemd unit starts the bot with flags `countersign run` takes, and keeps
// the hardening the README promises: a dedicated user, a private data folder,
// restart on failure.
func TestTheSystemdUnitRunsTheBotHardened(t *testing.T) {
	keys := unitSettings(t, unitFile)
	for k, want := range map[string]string{"User": "countersign", "StateDirectory": "countersign", "StateDirectoryMode": "0700",
		"Restart": "on-failure", "UMask": "0077", "NoNewPrivileges": "true", "ProtectSystem": "strict", "ProtectHome": "true",
		"PrivateTmp": "true", "CapabilityBoundingSet": "", "ReadWritePaths": "/var/lib/countersign"} {
		if got := keys[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	exec := strings.Fields(keys["ExecStart"][0])
	if len(exec) < 2 || exec[1] != "run" {
		t.Fatalf("ExecStart = %q, want the binary and run", exec)
	}
	if r := runMain(t, "", nil, append(exec[1:], "-h")...); r.code != exitOK {
		t.Errorf("ExecStart's flags: bot %s -h = %d, %s", strings.Join(exec[1:], " "), r.code, r.stderr)
	}
	if i := slices.Index(exec, "-data"); i < 0 || exec[i+1] != "/var/lib/countersign" {
		t.Errorf("ExecStart = %q, want -data /var/lib/countersign, the StateDirectory", exec)
	}
}
