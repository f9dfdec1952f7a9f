package quantile_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/internal/cmd/quantile"
)

func TestOfIsTheNearestRank(t *testing.T) {
	ten := []time.Duration{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	for _, tt := range []struct {
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]time.Duration{7}, 0.99, 7},
		{ten, 0.5, 5},
		{ten, 0.9, 9},
		{ten, 0.99, 10},
		{ten, 0, 1},
	} {
		if got := quantile.Of(tt.ds, tt.q); got != tt.want {
			t.Errorf("Of(%v, %g) = %d, want %d", tt.ds, tt.q, got, tt.want)
		}
	}
	if ten[0] != 10 {
		t.Errorf("Of sorted its argument: %v", ten)
	}
}
