package policy_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// loopGuardSnapshot is the loop_guard of a policy as a task stores it.
func loopGuardSnapshot(t *testing.T, p *policy.Policy) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return string(m["loop_guard"])
}

// TestLoopGuardTakesABooleanOrAMapping: the old boolean keeps working and gets the
// default counts; a mapping sets them; the task's snapshot carries all of it.
func TestLoopGuardTakesABooleanOrAMapping(t *testing.T) {
	tests := []struct{ name, extra, want string }{
		{"left out", "", `{"enabled":true,"failures":1,"successes":1,"ping_pong":2}`},
		{"true", "loop_guard: true\n", `{"enabled":true,"failures":1,"successes":1,"ping_pong":2}`},
		{"false", "loop_guard: false\n", `{"enabled":false,"failures":1,"successes":1,"ping_pong":2}`},
		{"mapping", "loop_guard:\n  enabled: true\n  failures: 2\n  ping_pong: 3\n", `{"enabled":true,"failures":2,"successes":1,"ping_pong":3}`},
		{"flow mapping, enabled left out", "loop_guard: {failures: 3}\n", `{"enabled":true,"failures":3,"successes":1,"ping_pong":2}`},
		{"ping-pong off", "loop_guard: {ping_pong: 0}\n", `{"enabled":true,"failures":1,"successes":1,"ping_pong":0}`},
		{"off as a mapping", "loop_guard: {enabled: false}\n", `{"enabled":false,"failures":1,"successes":1,"ping_pong":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.Parse(strings.NewReader(minimal + tt.extra))
			if err != nil {
				t.Fatal(err)
			}
			if got := loopGuardSnapshot(t, p); got != tt.want {
				t.Errorf("loop_guard = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestLoopGuardSnapshotFromBefore: a task stored when loop_guard was a boolean
// reads back with the default counts.
func TestLoopGuardSnapshotFromBefore(t *testing.T) {
	for old, want := range map[string]string{
		`{"loop_guard":true}`:  `{"enabled":true,"failures":1,"successes":1,"ping_pong":2}`,
		`{"loop_guard":false}`: `{"enabled":false,"failures":1,"successes":1,"ping_pong":2}`,
		// Stored before successes existed: it takes the default.
		`{"loop_guard":{"enabled":true,"failures":2,"ping_pong":3}}`: `{"enabled":true,"failures":2,"successes":1,"ping_pong":3}`,
	} {
		var p policy.Policy
		if err := json.Unmarshal([]byte(old), &p); err != nil {
			t.Fatalf("%s: %v", old, err)
		}
		if got := loopGuardSnapshot(t, &p); got != want {
			t.Errorf("%s reads back as %s, want %s", old, got, want)
		}
	}
}

func TestLoopGuardErrorsNameFieldAndLine(t *testing.T) {
	tests := []struct{ name, extra, want string }{
		{"not a boolean", "loop_guard: maybe\n", `line 8: loop_guard: want true, false or a mapping {enabled, failures, successes, ping_pong}, got "maybe"`},
		{"unknown key", "loop_guard:\n  repeats: 2\n", "line 9: loop_guard.repeats: unknown key"},
		{"no failure allowed", "loop_guard:\n  failures: 0\n", "line 9: loop_guard.failures: must be at least 1, got 0"},
		{"no success allowed", "loop_guard:\n  successes: 0\n", "line 9: loop_guard.successes: must be at least 1, got 0"},
		{"one round", "loop_guard:\n  ping_pong: 1\n", "line 9: loop_guard.ping_pong: must be 0 (off) or at least 2, got 1"},
		{"wrong type", "loop_guard:\n  enabled: yes please\n", `line 9: loop_guard.enabled: want true or false, got "yes please"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse(strings.NewReader(minimal + tt.extra))
			var errs policy.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse error = %v, want policy.Errors", err)
			}
			if got := errs[0].Error(); got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}
