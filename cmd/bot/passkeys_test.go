package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/passkeytest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// approverPasskey runs "countersign approver passkey ARGS".
func approverPasskey(t *testing.T, args ...string) result {
	t.Helper()
	return runMain(t, "", nil, append([]string{"approver", "passkey"}, args...)...)
}

// TestApproverPasskeyPrintsAOneTimeLink: the link (with its QR code) names
// the review page's enrolment and a token the journal keeps only hashed;
// it works once; -remove forgets the user's passkeys; a review page on an IP
// address, or none, is refused before anything is written.
func TestApproverPasskeyPrintsAOneTimeLink(t *testing.T) {
	data := auditedData(t)
	r := approverPasskey(t, "-data", data, "-review-url", "https://bot.example.com", "42")
	m := regexp.MustCompile(`https://bot\.example\.com/review/passkey/enrol#t=([A-Za-z0-9_-]{43})`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || !strings.Contains(r.stdout, "▀") || !strings.Contains(r.stdout, "never through Telegram") {
		t.Fatalf("approver passkey: exit %d\n%s%s; want a link, its QR code and how to give it", r.code, r.stdout, r.stderr)
	}
	ctx := context.Background()
	j, err := journal.Open(ctx, filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if user, _, err := j.PasskeyLink(ctx, m[1]); err != nil || user != 42 {
		t.Fatalf("the printed link's token: user %d, %v; want 42's", user, err)
	}
	cred := passkeytest.New(42).Credential()
	if err := j.FinishPasskeyLink(ctx, m[1], cred); err != nil {
		t.Fatal(err)
	}
	if list := runMain(t, "", nil, "approver", "list", "-data", data); list.code != 0 || !strings.Contains(list.stdout, "passkey") || !strings.Contains(list.stdout, cred.Key().Fingerprint()) {
		t.Errorf("approver list: exit %d\n%s%s; want 42's passkey with its fingerprint", list.code, list.stdout, list.stderr)
	}
	if r := approverPasskey(t, "-data", data, "-remove", "42"); r.code != 0 || !strings.Contains(r.stdout, "are removed") {
		t.Errorf("-remove: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-data", data, "-review-url", "https://127.0.0.1:8443", "42"}, 2, "IP address"},
		{[]string{"-data", data, "42"}, 2, "-review-url is where the enrolment page is served"},
		{[]string{"-data", data, "-review-url", "https://bot.example.com", "alice"}, 2, "not a Telegram user id"},
		{[]string{"-data", data, "-remove", "42"}, 1, "user 42 has no passkey"},
	} {
		if r := approverPasskey(t, tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d\n%s%s; want %d and %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.want)
		}
	}
}

func TestAPolicyThatAsksAPasskeyNeedsTheReviewPage(t *testing.T) {
	p := &policy.Policy{Tools: map[string]policy.Tool{"commit_x": {SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired, StepUp: policy.FactorPasskey}}}
	for _, tc := range []struct{ url, want string }{
		{"", "serve it with -review-listen and -review-url"},
		{"http://127.0.0.1:8443", "cannot host one"},
		{"https://bot.example.com", ""},
	} {
		err := checkPasskeys(p, tc.url)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkPasskeys(%q) = %v, want %q", tc.url, err, tc.want)
		}
	}
	if err := checkPasskeys(&policy.Policy{}, ""); err != nil {
		t.Errorf("a policy without passkeys: %v", err)
	}
}
