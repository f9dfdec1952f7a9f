package metrics_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/internal/metrics"
)

// The exposition of each kind, as the text format 0.0.4 spells it: HELP and TYPE
// lines, families sorted by name, escaped help and label values, and a histogram's
// cumulative buckets with +Inf, then _sum and _count.
func TestWriteToSpeaksTheTextFormat(t *testing.T) {
	r := metrics.New()
	c := r.Counter("x_updates_total", "Updates taken.")
	c.Add(2)
	c.Inc()
	r.Gauge("x_info", `Who: a "back\slash"`+"\nand a newline.", metrics.Label{Name: "replica", Value: `a"b\c` + "\nd"}).Set(1)
	g := r.Gauge("x_leader", "Leader or not.")
	g.Set(5)
	g.Add(-4.5)
	h := r.Histogram("x_seconds", "Latency.", []float64{0.1, 1, 10})
	for _, v := range []float64{0.05, 0.1, 0.5, 3, 60} {
		h.Observe(v)
	}
	r.GaugeFunc("x_ops", "By state.", func(context.Context) ([]metrics.Sample, error) {
		return []metrics.Sample{{Labels: []metrics.Label{{Name: "state", Value: "committed"}}, Value: 3},
			{Labels: []metrics.Label{{Name: "state", Value: "unknown"}}, Value: 0}}, nil
	})
	var b strings.Builder
	if err := r.WriteTo(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	want := `# HELP x_info Who: a "back\\slash"\nand a newline.
# TYPE x_info gauge
x_info{replica="a\"b\\c\nd"} 1
# HELP x_leader Leader or not.
# TYPE x_leader gauge
x_leader 0.5
# HELP x_ops By state.
# TYPE x_ops gauge
x_ops{state="committed"} 3
x_ops{state="unknown"} 0
# HELP x_seconds Latency.
# TYPE x_seconds histogram
x_seconds_bucket{le="0.1"} 2
x_seconds_bucket{le="1"} 3
x_seconds_bucket{le="10"} 4
x_seconds_bucket{le="+Inf"} 5
x_seconds_sum 63.65
x_seconds_count 5
# HELP x_updates_total Updates taken.
# TYPE x_updates_total counter
x_updates_total 3
`
	if got := b.String(); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
}

// A gauge read at scrape time that fails is left out, HELP and TYPE included; the
// other metrics are written, and the failure is returned.
func TestAFailingGaugeFuncLeavesTheOthers(t *testing.T) {
	r := metrics.New()
	r.Counter("a_total", "A.").Inc()
	down := errors.New("journal down")
	r.GaugeFunc("b", "B.", func(context.Context) ([]metrics.Sample, error) { return nil, down })
	var b strings.Builder
	err := r.WriteTo(context.Background(), &b)
	if !errors.Is(err, down) {
		t.Errorf("err = %v, want the gauge's failure", err)
	}
	if got, want := b.String(), "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n"; got != want {
		t.Errorf("exposition = %q, want %q", got, want)
	}
}

func TestSpecialValues(t *testing.T) {
	r := metrics.New()
	r.Gauge("p", "P.").Set(math.Inf(1))
	r.Gauge("n", "N.").Set(math.Inf(-1))
	r.Gauge("q", "Q.").Set(math.NaN())
	r.Gauge("big", "Big.").Set(1e21)
	var b strings.Builder
	r.WriteTo(context.Background(), &b)
	for _, want := range []string{"\np +Inf\n", "\nn -Inf\n", "\nq NaN\n", "\nbig 1e+21\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("exposition lacks %q:\n%s", want, b.String())
		}
	}
}

// Nil metrics record nothing, so that code counts without asking whether anyone
// listens; a counter never goes down.
func TestNilMetricsAndNegativeCounts(t *testing.T) {
	var c *metrics.Counter
	var g *metrics.Gauge
	var h *metrics.Histogram
	c.Inc()
	g.Set(1)
	h.Observe(1)
	if c.Value() != 0 || g.Value() != 0 {
		t.Error("a nil metric has a value")
	}
	c = metrics.New().Counter("c_total", "C.")
	c.Add(-1)
	if c.Value() != 0 {
		t.Errorf("counter = %v after a negative add, want 0", c.Value())
	}
}

func TestRegistrationMistakesPanic(t *testing.T) {
	tests := []struct {
		name string
		fn   func(r *metrics.Registry)
	}{
		{"twice", func(r *metrics.Registry) { r.Counter("a_total", ""); r.Gauge("a_total", "") }},
		{"bad name", func(r *metrics.Registry) { r.Counter("a-b", "") }},
		{"bad label", func(r *metrics.Registry) { r.Gauge("a", "", metrics.Label{Name: "le-x"}) }},
		{"buckets", func(r *metrics.Registry) { r.Histogram("h", "", []float64{1, 1}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tt.fn(metrics.New())
		})
	}
}

// Counts from many goroutines add up; a scrape during them reads a histogram
// whose +Inf bucket equals its count.
func TestConcurrentUse(t *testing.T) {
	r := metrics.New()
	c := r.Counter("c_total", "C.")
	h := r.Histogram("h", "H.", []float64{1})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Inc()
				h.Observe(0.5)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			var b strings.Builder
			r.WriteTo(context.Background(), &b)
			var inf, count string
			for _, l := range strings.Split(b.String(), "\n") {
				if v, ok := strings.CutPrefix(l, `h_bucket{le="+Inf"} `); ok {
					inf = v
				}
				if v, ok := strings.CutPrefix(l, "h_count "); ok {
					count = v
				}
			}
			if inf != count {
				t.Errorf("+Inf bucket %s, count %s", inf, count)
			}
		}
	})
	wg.Wait()
	if c.Value() != 8000 {
		t.Errorf("counter = %v, want 8000", c.Value())
	}
}

func TestHandler(t *testing.T) {
	r := metrics.New()
	r.Counter("c_total", "C.").Inc()
	srv := httptest.NewServer(r.Handler(nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != metrics.ContentType || !strings.Contains(string(body), "c_total 1\n") {
		t.Errorf("GET: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, err = http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}
