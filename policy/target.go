package policy

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrInvalidTarget is wrapped by NormalizeTarget's error for a string that names no
// Telegram chat.
var ErrInvalidTarget = errors.New("not a chat id or @username")

// username is a Telegram username: 5 to 32 letters, digits and underscores, starting
// with a letter.
var username = regexp.MustCompile(`^@[A-Za-z][A-Za-z0-9_]{4,31}$`)

// NormalizeTarget returns the one way of writing the chat s names, so that two
// spellings of a chat compare equal. Telegram reads a chat id as an integer, so
// "+222", "0222" and "222" are one chat, written "222" (a channel's "-100…" stays
// negative); it reads usernames without regard to case, so "@News_Desk" is written
// "@news_desk". Space around s is dropped. The error wraps ErrInvalidTarget for
// anything else, including the id 0, which is no chat.
//
// The tools store targets in this form in the payload, and the policy stores the
// targets it names in it, so the two meet in the approval, the journal and every check.
func NormalizeTarget(s string) (string, error) {
	t := strings.TrimSpace(s)
	if username.MatchString(t) {
		return strings.ToLower(t), nil
	}
	id, err := strconv.ParseInt(t, 10, 64)
	if err != nil || id == 0 {
		return "", fmt.Errorf("%q is %w", s, ErrInvalidTarget)
	}
	return strconv.FormatInt(id, 10), nil
}

// sameTarget reports whether a and b name the same chat. Strings that name no chat
// match only themselves.
func sameTarget(a, b string) bool {
	na, errA := NormalizeTarget(a)
	nb, errB := NormalizeTarget(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return na == nb
}
