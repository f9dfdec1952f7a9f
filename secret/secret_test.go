package secret_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/secret"
)

// fill returns n made-up key characters, letters and digits mixed as real keys are.
func fill(n int) string {
	const alphabet = "aB3dE5gH7jK9mN1pQ2sT4vW6xY8zC0"
	var b strings.Builder
	for i := range n {
		b.WriteByte(alphabet[i%len(alphabet)])
	}
	return b.String()
}

// upper returns n made-up characters of an AWS key id's alphabet.
func upper(n int) string {
	return strings.ToUpper(fill(n))
}

func TestSecretShapesAndNearMisses(t *testing.T) {
	tests := []struct {
		name               string
		before, key, after string
		found              bool
	}{
		// Real shapes, made-up values: found wherever they stand on their own.
		{"Telegram token, 9-digit id", "token ", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1", " here", true},
		{"Telegram token, 10-digit id", "", "7012345678:" + fill(35), "", true},
		{"Telegram token as the Bot API documents it", "", "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "", true},
		{"Telegram token, 8-digit id", "(", "12345678:AA" + fill(33), ")", true},
		{"Telegram token in a Bot API URL", "https://api.telegram.org/bot", "123456789:" + fill(35), "/getMe", true},
		{"Telegram token after a label", "token:", "123456789:" + fill(35), "", true},
		{"Anthropic API key", "key ", "sk-ant-api03-" + fill(93) + "AA", "", true},
		{"Anthropic admin key", "", "sk-ant-admin01-" + fill(91) + "-_AA", ".", true},
		{"OpenAI legacy key", "OPENAI_API_KEY=", "sk-" + fill(20) + "T3BlbkFJ" + fill(20), "", true},
		{"OpenAI project key", "", "sk-proj-" + fill(74) + "T3BlbkFJ" + fill(74), "", true},
		{"OpenAI service account key", "'", "sk-svcacct-" + fill(58) + "T3BlbkFJ" + fill(58), "'", true},
		{"OpenAI admin key", "", "sk-admin-" + fill(58) + "T3BlbkFJ" + fill(58), "", true},
		{"OpenAI-compatible key", "", "sk-" + strings.ToLower(fill(32)), "", true},
		{"OpenRouter key", "", "sk-or-v1-" + strings.Repeat("0f3a", 16), "", true},
		{"GitHub classic token", "", "ghp_" + fill(36), "", true},
		{"GitHub OAuth token", "", "gho_" + fill(36), "", true},
		{"GitHub user-to-server token", "", "ghu_" + fill(36), "", true},
		{"GitHub server-to-server token", "", "ghs_" + fill(36), "", true},
		{"GitHub refresh token", "", "ghr_" + fill(36), "", true},
		{"GitHub fine-grained token", "", "github_pat_" + fill(22) + "_" + fill(59), "", true},
		{"GitLab token", "", "glpat-" + fill(20), "", true},
		{"AWS access key id", "", "AKIAIOSFODNN7EXAMPLE", "", true},
		{"AWS temporary key id", "id=", "ASIA" + upper(16), "&", true},
		{"Slack bot token", "", "xoxb-123456789012-1234567890123-" + fill(24), "", true},
		{"Slack user token", "", "xoxp-123456789012-123456789012-1234567890123-" + strings.ToLower(fill(32)), "", true},
		{"Slack app token", "", "xapp-1-A0123ABCDEF-1234567890123-" + strings.ToLower(fill(64)), "", true},
		{"Google API key", "?key=", "AIza" + fill(33) + "-_", "&q=1", true},
		{"Stripe live secret key", "", "sk_live_" + fill(24), "", true},
		{"Stripe restricted key", "", "rk_live_" + fill(99), "", true},
		{"Stripe test secret key", "", "sk_test_" + fill(24), "", true},
		{"Hugging Face token", "", "hf_" + fill(34), "", true},
		{"Groq key", "", "gsk_" + fill(52), "", true},
		// The inbox stores raw JSON: an escape before a key is not part of its word.
		{"key after a JSON newline", `{"text":"my key:\n`, "sk-ant-api03-" + fill(93) + "AA", `"}`, true},
		{"key after a JSON tab", `{"text":"\t`, "ghp_" + fill(36), `\n"}`, true},
		{"key after a JSON unicode escape", `{"text":"\u00a0`, "AIza" + fill(35), `"}`, true},

		// Near misses: ids, words and keys glued inside longer words.
		{"task id", "see ", "task-3f2a9c1e7b4d5e6f8a9b0c1d2e3f4a5b6c7d", "", false},
		{"desk team slug", "", "desk-team-2026-rotation-for-the-weekend-shift", "", false},
		{"risk slug", "", "risk-assessment-2026-q3-draft-final-version", "", false},
		{"uuid", "", "3f2a9c1e-7b4d-4e6f-8a9b-0c1d2e3f4a5b", "", false},
		{"git SHA", "commit ", "9fceb02d0ae598e95dc970b74767f19372d61af8", "", false},
		{"sk-learn", "pip install ", "sk-learn", "", false},
		{"sk- and a short word", "", "sk-short", "", false},
		{"sk- and a slug", "", "sk-this-is-a-perfectly-ordinary-slug-name", "", false},
		{"Anthropic shape glued to a word", "", "xsk-ant-api03-" + fill(93) + "AA", "", false},
		{"Anthropic prefix, short body", "", "sk-ant-api03-" + fill(24), "", false},
		{"AWS shape glued to a word", "", "AKIAIOSFODNN7EXAMPLEX", "", false},
		{"AWS shape in lower case", "", "AKIAiosfodnn7example", "", false},
		{"GitHub shape glued to a word", "", "myghp_" + fill(36), "", false},
		{"GitHub prefix, short body", "", "ghp_" + fill(20), "", false},
		{"Google shape too long", "", "AIza" + fill(36), "", false},
		{"Stripe publishable key", "", "pk_live_" + fill(24), "", false},
		{"Telegram id, short secret", "", "123456789:" + fill(33), "", false},
		{"Telegram short id", "", "123456:" + fill(35), "", false},
		{"chat id and a time", "chat ", "-1001234567890", " at 12:30", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.before + tt.key + tt.after
			want := in
			if tt.found {
				want = tt.before + secret.Withheld + tt.after
			}
			got, found := secret.Redact(in)
			if got != want || found != tt.found {
				t.Errorf("Redact(%q) = %q, %v; want %q, %v", in, got, found, want, tt.found)
			}
			if got := secret.Contains(in); got != tt.found {
				t.Errorf("Contains(%q) = %v, want %v", in, got, tt.found)
			}
		})
	}
}

func TestRedactWithholdsEveryKey(t *testing.T) {
	a, b := "ghp_"+fill(36), "AKIAIOSFODNN7EXAMPLE"
	in := a + " " + b + "," + a
	want := secret.Withheld + " " + secret.Withheld + "," + secret.Withheld
	if got, found := secret.Redact(in); got != want || !found {
		t.Errorf("Redact(%q) = %q, %v; want %q, true", in, got, found, want)
	}
}
