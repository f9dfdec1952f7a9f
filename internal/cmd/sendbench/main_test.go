package main

import (
	"context"
	"testing"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    []shape
		wantErr bool
	}{
		{"defaults", nil, []shape{{600, 60}, {100, 20}}, false},
		{"one run", []string{"-runs", "30/3"}, []shape{{30, 3}}, false},
		{"no runs", []string{"-runs", ""}, nil, false},
		{"not a shape", []string{"-runs", "30"}, nil, true},
		{"no chats", []string{"-runs", "30/0"}, nil, true},
		{"negative drop", []string{"-drop", "-1"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseFlags(%q) error = %v, want error %v", tc.args, err, tc.wantErr)
			}
			if err == nil && !equalShapes(c.runs, tc.want) {
				t.Errorf("runs = %v, want %v", c.runs, tc.want)
			}
		})
	}
}

func equalShapes(a, b []shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDeliveryThroughCountersign runs a small delivery with lost responses: every
// message arrives once, none earns a 429, and each lost response is held as
// unknown instead of being resent.
func TestDeliveryThroughCountersign(t *testing.T) {
	if testing.Short() {
		t.Skip("takes seconds of real time")
	}
	c := config{drop: 4, policies: "../../../policies.yaml"}
	s := shape{n: 12, chats: 4}
	srv := newServer(c, s)
	defer srv.Close()
	o, err := viaCountersign(context.Background(), c, s, srv)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.errs) != 0 {
		t.Errorf("failed operations: %v", o.errs)
	}
	if got := len(srv.AllMessages()); got != s.n {
		t.Errorf("delivered %d, want %d", got, s.n)
	}
	if n, d := srv.TooManyRequests(), duplicates(srv); n != 0 || d != 0 {
		t.Errorf("429s = %d, duplicates = %d; want 0 and 0", n, d)
	}
	if o.unknown != s.n/c.drop {
		t.Errorf("held as unknown: %d, want %d (one per lost response)", o.unknown, s.n/c.drop)
	}
	if min := theoreticalMinimum(s); o.elapsed() < min {
		t.Errorf("took %v, less than Telegram's minimum %v", o.elapsed(), min)
	}
}

// TestApprovalTapsAreTimed times a few approvals through the bot: each is
// measured from its tap's hand-out to its send, the answer in between.
func TestApprovalTapsAreTimed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bot")
	}
	c := config{approvals: 5, policies: "../../../policies.yaml"}
	ds, parts, err := countersignTaps(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 5 || len(parts.toAnswer) != 5 || len(parts.toSend) != 5 {
		t.Fatalf("timed %d approvals (%d answers, %d sends), want 5 of each", len(ds), len(parts.toAnswer), len(parts.toSend))
	}
	for i, d := range ds {
		if d <= 0 || parts.toAnswer[i] <= 0 {
			t.Errorf("approval %d: %v to the send, %v to the answer; want both after the hand-out", i, d, parts.toAnswer[i])
		}
	}
}
