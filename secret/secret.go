// Package secret recognises credentials in free text (Telegram bot tokens, API keys)
// so that no part of the bot writes one down: not the journal, the vault or a log.
package secret

import (
	"regexp"
	"strings"
)

// Withheld is written in place of a secret.
const Withheld = "[secret withheld]"

var pattern = regexp.MustCompile(strings.Join([]string{
	`\d{6,12}:[A-Za-z0-9_-]{30,}`,  // Telegram bot token
	`sk-[A-Za-z0-9_-]{20,}`,        // Anthropic (sk-ant-…), OpenAI (sk-…, sk-proj-…)
	`AKIA[0-9A-Z]{16}`,             // AWS access key id
	`xox[abpsr]-[A-Za-z0-9-]{10,}`, // Slack
	`gh[pousr]_[A-Za-z0-9]{20,}`,   // GitHub
	`github_pat_[A-Za-z0-9_]{20,}`, // GitHub fine-grained
}, "|"))

// Contains reports whether s holds something that looks like a secret.
func Contains(s string) bool { return pattern.MatchString(s) }

// Redact returns s with every secret replaced by Withheld, and whether it found any.
func Redact(s string) (string, bool) {
	if !pattern.MatchString(s) {
		return s, false
	}
	return pattern.ReplaceAllString(s, Withheld), true
}
