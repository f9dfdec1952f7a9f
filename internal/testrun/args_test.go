package main

import (
	"slices"
	"testing"
)

func TestTestsRunTwiceTheCoresAtATimeUnlessTold(t *testing.T) {
	tests := []struct {
		args []string
		cpus int
		want []string
	}{
		{[]string{"./..."}, 2, []string{"-parallel", "4", "./..."}},
		{[]string{"-count=1", "./..."}, 8, []string{"-parallel", "16", "-count=1", "./..."}},
		{[]string{"-parallel", "1", "./..."}, 2, []string{"-parallel", "1", "./..."}},
		{[]string{"-parallel=3", "./..."}, 2, []string{"-parallel=3", "./..."}},
		{[]string{"--parallel=3", "./..."}, 2, []string{"--parallel=3", "./..."}},
		{[]string{"-run", "parallel", "./..."}, 1, []string{"-parallel", "2", "-run", "parallel", "./..."}},
		{[]string{"./...", "--", "-parallel=9"}, 2, []string{"-parallel", "4", "./...", "--", "-parallel=9"}},
		{nil, 0, []string{"-parallel", "2"}},
	}
	for _, tt := range tests {
		if got := testArgs(tt.args, tt.cpus); !slices.Equal(got, tt.want) {
			t.Errorf("testArgs(%q, %d) = %q, want %q", tt.args, tt.cpus, got, tt.want)
		}
	}
}
