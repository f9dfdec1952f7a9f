// Package metrics keeps a process's counters, gauges and histograms and writes
// them in the Prometheus text exposition format, version 0.0.4, for a scraper to
// read at GET /metrics. It is the few kinds of metric the bot needs, safe for
// concurrent use; a nil *Counter, *Gauge or *Histogram records nothing, so that
// code which counts need not ask whether anyone listens.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the Content-Type of the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Label is one name="value" pair of a sample.
type Label struct{ Name, Value string }

// Sample is one value of a gauge read at scrape time (Registry.GaugeFunc).
type Sample struct {
	Labels []Label
	Value  float64
}

// Registry holds a process's metrics and writes them (WriteTo). The zero value is
// not ready: use New.
type Registry struct {
	mu       sync.Mutex
	families map[string]family
}

// family is one metric as the exposition names it: its samples are written under
// one HELP and one TYPE line.
type family struct {
	name, help, kind string
	write            func(ctx context.Context, w *writer) error
}

// New returns an empty registry.
func New() *Registry { return &Registry{families: map[string]family{}} }

// register adds a family; a name given twice, or one the format does not allow,
// is a mistake of the program, and panics at start.
func (r *Registry) register(f family) {
	if !validName(f.name) {
		panic(fmt.Sprintf("metrics: %q is not a metric name", f.name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.families[f.name]; dup {
		panic(fmt.Sprintf("metrics: %s registered twice", f.name))
	}
	r.families[f.name] = f
}

// Counter is a count that only goes up.
type Counter struct{ bits atomic.Uint64 }

// Counter registers and returns a counter. By convention its name ends in _total.
func (r *Registry) Counter(name, help string) *Counter {
	c := &Counter{}
	r.register(family{name: name, help: help, kind: "counter", write: func(_ context.Context, w *writer) error {
		w.sample(name, nil, c.Value())
		return nil
	}})
	return c
}

// Inc adds one.
func (c *Counter) Inc() { c.Add(1) }

// Add adds v, which must not be negative (a negative v is ignored).
func (c *Counter) Add(v float64) {
	if c == nil || v < 0 {
		return
	}
	addFloat(&c.bits, v)
}

// Value is the count so far.
func (c *Counter) Value() float64 {
	if c == nil {
		return 0
	}
	return math.Float64frombits(c.bits.Load())
}

// Gauge is a value that is set, up or down.
type Gauge struct{ bits atomic.Uint64 }

// Gauge registers and returns a gauge, written with the given labels (none, or
// constant ones such as a replica's name).
func (r *Registry) Gauge(name, help string, labels ...Label) *Gauge {
	g := &Gauge{}
	labels = slices.Clone(labels)
	for _, l := range labels {
		if !validLabel(l.Name) {
			panic(fmt.Sprintf("metrics: %s: %q is not a label name", name, l.Name))
		}
	}
	r.register(family{name: name, help: help, kind: "gauge", write: func(_ context.Context, w *writer) error {
		w.sample(name, labels, g.Value())
		return nil
	}})
	return g
}

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) {
	if g != nil {
		g.bits.Store(math.Float64bits(v))
	}
}

// Add adds v (negative to go down).
func (g *Gauge) Add(v float64) {
	if g != nil {
		addFloat(&g.bits, v)
	}
}

// Value is the gauge's value now.
func (g *Gauge) Value() float64 {
	if g == nil {
		return 0
	}
	return math.Float64frombits(g.bits.Load())
}

// GaugeFunc registers a gauge whose samples read is called for at each scrape,
// with the scrape's context: a count kept elsewhere (a database) is read where it
// is kept rather than mirrored. When read fails, the scrape writes the other
// metrics and the error (see WriteTo).
func (r *Registry) GaugeFunc(name, help string, read func(context.Context) ([]Sample, error)) {
	r.register(family{name: name, help: help, kind: "gauge", write: func(ctx context.Context, w *writer) error {
		samples, err := read(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, s := range samples {
			w.sample(name, s.Labels, s.Value)
		}
		return nil
	}})
}

func addFloat(bits *atomic.Uint64, v float64) {
	for {
		old := bits.Load()
		if bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// WriteTo writes every metric in the text exposition format, sorted by name. A
// gauge whose read fails is left out, with no HELP or TYPE line; the others are
// written, and the failures returned joined (errors.Is finds each).
func (r *Registry) WriteTo(ctx context.Context, out io.Writer) error {
	r.mu.Lock()
	fams := make([]family, 0, len(r.families))
	for _, f := range r.families {
		fams = append(fams, f)
	}
	r.mu.Unlock()
	slices.SortFunc(fams, func(a, b family) int { return strings.Compare(a.name, b.name) })
	var errs []error
	w := &writer{}
	for _, f := range fams {
		var body writer
		if err := f.write(ctx, &body); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(&w.b, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.kind)
		w.b.WriteString(body.b.String())
	}
	if _, err := io.WriteString(out, w.b.String()); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// writer builds the exposition's sample lines.
type writer struct{ b strings.Builder }

func (w *writer) sample(name string, labels []Label, v float64) {
	w.b.WriteString(name)
	if len(labels) > 0 {
		w.b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.b.WriteString(l.Name + `="` + escapeLabel(l.Value) + `"`)
		}
		w.b.WriteByte('}')
	}
	w.b.WriteString(" " + formatFloat(v) + "\n")
}

// formatFloat writes a value as the format spells it: +Inf, -Inf, NaN, or Go's
// shortest representation.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// HELP text escapes backslash and newline; label values also the double quote.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// validName is the format's metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
func validName(s string) bool {
	for i, c := range s {
		ok := c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return s != ""
}

// validLabel is the format's label name: [a-zA-Z_][a-zA-Z0-9_]*, and not one of
// the names reserved to the format (__ prefix).
func validLabel(s string) bool {
	return validName(s) && !strings.Contains(s, ":") && !strings.HasPrefix(s, "__")
}
