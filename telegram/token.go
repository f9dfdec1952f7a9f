package telegram

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/countersign/countersign/secret"
)

// TokenShape is what a bot token looks like, for the messages that refuse one.
const TokenShape = "a token is <bot id>:<secret> as @BotFather gives it: digits, a ':', then 35 letters, digits, '_' and '-'"

// TokenError says what is wrong with a bot token, never what the token is: the
// token goes into every request's URL, so a malformed one would otherwise be
// quoted, whole, by the first error that URL causes.
type TokenError struct{ Problem string }

func (e *TokenError) Error() string { return "bot token: " + e.Problem + " (" + TokenShape + ")" }

// The secret half of a token is 35 characters in the tokens @BotFather issues and
// 34 in the Bot API's documented example; a little room either side costs nothing.
const minTokenSecret, maxTokenSecret = 30, 64

// ParseToken returns the bot token in s, without the spaces, CR or matching pair
// of quotes (" or ') an env file or a shell may leave around it, or a
// *TokenError that says what is wrong with its shape. A token can hold neither a
// space nor a quote, so taking it out of them changes no real token.
func ParseToken(s string) (string, error) {
	tok := secret.Unquote(strings.TrimSpace(s))
	bad := func(format string, args ...any) (string, error) {
		return "", &TokenError{Problem: fmt.Sprintf(format, args...)}
	}
	if tok == "" {
		return bad("it is empty")
	}
	for _, r := range tok {
		switch {
		case r == '"' || r == '\'':
			return bad("it has a quote that does not close; write it without quotes")
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return bad("it has a space or a control character inside it")
		case !tokenChar(r) && r != ':':
			return bad("it has %q, which no token has", r)
		}
	}
	id, key, ok := strings.Cut(tok, ":")
	switch {
	case !ok:
		return bad("it has no ':' between the bot id and its secret")
	case strings.Contains(key, ":"):
		return bad("it has more than one ':'")
	case id == "" || strings.Trim(id, "0123456789") != "":
		return bad("the bot id before the ':' is not a number")
	case len(key) < minTokenSecret || len(key) > maxTokenSecret:
		return bad("the secret after the ':' is %d characters", len(key))
	}
	return tok, nil
}

// tokenChar reports whether r may be in a token's secret: the characters of a
// URL path segment that need no escaping.
func tokenChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}
