package metrics

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Histogram counts observations in fixed buckets, and keeps their sum and count.
type Histogram struct {
	bounds []float64 // upper bounds, ascending, +Inf not among them
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf's
	sum    float64
	n      uint64
}

// Histogram registers and returns a histogram over buckets, the upper bounds of
// its buckets in ascending order (a +Inf bucket is always added). Bounds that do
// not ascend are a mistake of the program, and panic at start.
func (r *Registry) Histogram(name, help string, buckets []float64) *Histogram {
	bounds := slices.DeleteFunc(slices.Clone(buckets), func(b float64) bool { return math.IsInf(b, 1) })
	for i := 1; i < len(bounds); i++ {
		if !(bounds[i] > bounds[i-1]) {
			panic(fmt.Sprintf("metrics: %s: buckets must ascend", name))
		}
	}
	h := &Histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
	r.register(family{name: name, help: help, kind: "histogram", write: func(_ context.Context, w *writer) error {
		h.write(name, w)
		return nil
	}})
	return h
}

// Observe records one observation of v.
func (h *Histogram) Observe(v float64) {
	if h == nil {
		return
	}
	i, _ := slices.BinarySearch(h.bounds, v) // the first bound >= v: le is inclusive
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[i]++
	h.sum += v
	h.n++
}

// write writes the cumulative buckets, then the sum and the count, taken at one
// instant so that the +Inf bucket equals the count.
func (h *Histogram) write(name string, w *writer) {
	h.mu.Lock()
	counts, sum, n := slices.Clone(h.counts), h.sum, h.n
	h.mu.Unlock()
	var cum uint64
	for i, c := range counts {
		cum += c
		le := math.Inf(1)
		if i < len(h.bounds) {
			le = h.bounds[i]
		}
		w.sample(name+"_bucket", []Label{{"le", formatFloat(le)}}, float64(cum))
	}
	w.sample(name+"_sum", nil, sum)
	w.sample(name+"_count", nil, float64(n))
}
