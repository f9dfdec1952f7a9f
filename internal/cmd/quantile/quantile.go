// Package quantile reads quantiles off the latencies the benchmark commands
// measure, one way for all of them, so that their figures compare.
package quantile

import (
	"math"
	"slices"
	"time"
)

// Of is the q-th quantile of ds by nearest rank (the smallest value with at
// least q of ds at or below it); 0 for none. ds is left as it was.
func Of(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(max(0, int(math.Ceil(q*float64(len(s))))-1), len(s)-1)]
}
