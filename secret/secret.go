// Package secret recognises credentials in free text (Telegram bot tokens, API keys)
// so that no part of the bot writes one down: not the journal, the vault or a log.
//
// A credential is known by its real shape: its issuer's prefix, then the length and
// alphabet the issuer uses, standing as a word of its own. A word is a run of letters,
// digits, "_" and "-", the characters keys are made of, so "task-3f2a9c…" and
// "desk-team-2026-…" are words that merely contain "sk-", and a key's shape glued
// inside a longer word is not a key.
package secret

import (
	"regexp"
	"strings"
)

// Withheld is written in place of a secret.
const Withheld = "[secret withheld]"

// keyShapes are the credentials recognised, each matched against a whole word.
var keyShapes = []string{
	`sk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_-]{93}AA`,    // Anthropic: sk-ant-api03-, sk-ant-admin01-, ...
	`sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}`, // OpenAI project, service account and admin keys
	`sk-[A-Za-z0-9]{32,}`,                          // OpenAI's older keys (48), and OpenAI-compatible servers'
	`sk-or-v1-[0-9a-f]{64}`,                        // OpenRouter
	`gh[pousr]_[A-Za-z0-9]{36}`,                    // GitHub
	`github_pat_[A-Za-z0-9_]{82}`,                  // GitHub fine-grained
	`glpat-[A-Za-z0-9_-]{20}`,                      // GitLab
	`(?:AKIA|ASIA)[A-Z0-9]{16}`,                    // AWS access key id
	`xox[abeprs]-[0-9]+-[A-Za-z0-9-]{20,}`,         // Slack
	`xapp-[0-9]+-[A-Za-z0-9-]{20,}`,                // Slack app-level
	`AIza[A-Za-z0-9_-]{35}`,                        // Google API key
	`[rs]k_(?:live|test)_[A-Za-z0-9]{24,}`,         // Stripe secret and restricted keys
	`hf_[A-Za-z0-9]{34}`,                           // Hugging Face
	`gsk_[A-Za-z0-9]{52}`,                          // Groq
}

var (
	word = regexp.MustCompile(`[A-Za-z0-9_-]+`)
	key  = regexp.MustCompile(`^(?:` + strings.Join(keyShapes, "|") + `)$`)
	// A Telegram bot token is two words joined by a colon: the bot's id (after
	// "bot" in a Bot API URL) and its secret, 35 characters in the tokens
	// @BotFather issues and 34 in the example the Bot API documents.
	botID     = regexp.MustCompile(`^(?:bot)?([0-9]{8,10})$`)
	botSecret = regexp.MustCompile(`^[A-Za-z0-9_-]{34,35}$`)
	hex4      = regexp.MustCompile(`^u[0-9A-Fa-f]{4}`)
)

// Contains reports whether s holds something that looks like a secret.
func Contains(s string) bool { return len(find(s)) > 0 }

// Redact returns s with every secret replaced by Withheld, and whether it found any.
func Redact(s string) (string, bool) {
	spans := find(s)
	if len(spans) == 0 {
		return s, false
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp[0]])
		b.WriteString(Withheld)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// find returns the byte spans of the secrets in s, in order.
func find(s string) [][2]int {
	words := word.FindAllStringIndex(s, -1)
	var spans [][2]int
	for i := 0; i < len(words); i++ {
		start, end := unescaped(s, words[i][0]), words[i][1]
		w := s[start:end]
		if i+1 < len(words) && words[i+1][0] == end+1 && s[end] == ':' {
			next := words[i+1]
			if id := botID.FindStringSubmatchIndex(w); id != nil && botSecret.MatchString(s[next[0]:next[1]]) {
				spans = append(spans, [2]int{start + id[2], next[1]})
				i++
				continue
			}
		}
		if key.MatchString(w) {
			spans = append(spans, [2]int{start, end})
		}
	}
	return spans
}

// unescaped skips the letters of a JSON escape (\n, \t, \u00a0, ...) at the start of
// the word at i: the inbox keeps updates as raw JSON, where a key on a new line
// follows "\n" with no break between.
func unescaped(s string, i int) int {
	if i == 0 || s[i-1] != '\\' {
		return i
	}
	switch {
	case strings.IndexByte("nrtbf", s[i]) >= 0:
		return i + 1
	case hex4.MatchString(s[i:]):
		return i + 5
	}
	return i
}
