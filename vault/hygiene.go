package vault

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/secret"
)

// Placeholders written in place of what hygiene removes.
const (
	Withheld    = secret.Withheld
	MaskedEmail = "[email]"
	MaskedPhone = "[phone]"
	MaskedCard  = "[card]"
)

// ExcerptRunes is how many runes of message text an excerpt keeps before "…".
const ExcerptRunes = 40

var (
	emailRe = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	// digitsRe matches a run of digits joined by short runs of spaces, dashes, dots and
	// parentheses; maskDigits decides from the digit count whether it is personal.
	digitsRe = regexp.MustCompile(`\+?\(?\d(?:[\s().-]{0,3}\d)*`)
	// handleRe matches what identifies a Telegram user without being free text.
	handleRe = regexp.MustCompile(`^(?:@?[A-Za-z0-9_]{1,64}|-?\d{1,20})$`)
)

// Mask returns s with secrets replaced by Withheld (Telegram bot tokens; API keys of
// the sk-, sk-ant-, AKIA, xox?-, ghp_ kinds) and personal data masked: e-mail
// addresses by MaskedEmail, card numbers (13 to 19 digits, no leading +) by
// MaskedCard, and other runs of 9 or more digits, such as phone numbers, by
// MaskedPhone. Long numeric ids in free text are masked too: that errs on the safe side.
func Mask(s string) string {
	s, _ = withhold(s)
	return maskPersonal(s)
}

// Excerpt returns a short, masked, one-line excerpt of message text: whitespace runs
// collapsed to one space, Mask applied, then cut to ExcerptRunes runes followed by "…"
// when longer. Masking comes before the cut so that a cut never leaves part of a
// number or address in clear. Excerpt(Excerpt(s)) == Excerpt(s).
func Excerpt(text string) string {
	text = Mask(strings.Join(strings.Fields(text), " "))
	if utf8.RuneCountInString(text) <= ExcerptRunes+1 {
		return text
	}
	i, n := 0, 0
	for i = range text {
		if n == ExcerptRunes {
			break
		}
		n++
	}
	return text[:i] + "…"
}

// withhold replaces secrets by Withheld and reports whether it found any.
func withhold(s string) (string, bool) { return secret.Redact(s) }

func maskPersonal(s string) string {
	s = emailRe.ReplaceAllString(s, MaskedEmail)
	return digitsRe.ReplaceAllStringFunc(s, maskDigits)
}

func maskDigits(run string) string {
	n := 0
	for i := 0; i < len(run); i++ {
		if run[i] >= '0' && run[i] <= '9' {
			n++
		}
	}
	switch {
	case n < 9:
		return run
	case run[0] != '+' && n >= 13 && n <= 19:
		return MaskedCard
	}
	return MaskedPhone
}

// checkID accepts an operation id that is well formed and does not look like a
// secret, since it names a file.
func checkID(id string) error {
	if err := envelope.CheckID(id); err != nil {
		return err
	}
	if secret.Contains(id) {
		return ErrSecretID
	}
	return nil
}

// clean applies hygiene to every string field: secrets withheld everywhere (and
// SecretWithheld set); free text (Response, Excerpt, and ResolvedBy unless it is a
// Telegram handle or id) masked; Excerpt cut short. Operation id, target, hash and
// times are never masked. It returns ErrSecretID or envelope.ErrInvalid for an id
// unfit to name a file.
func clean(e envelope.Envelope) (envelope.Envelope, error) {
	if err := checkID(e.OperationID); err != nil {
		return envelope.Envelope{}, err
	}
	var found bool
	w := func(s string) string {
		s, hit := withhold(s)
		found = found || hit
		return s
	}
	e.Action, e.Tool, e.LastConfirmed = w(e.Action), w(e.Tool), w(e.LastConfirmed)
	e.NextAction, e.Target, e.PayloadSHA256 = w(e.NextAction), w(e.Target), w(e.PayloadSHA256)
	e.Resolution, e.ResolvedBy = w(e.Resolution), w(e.ResolvedBy)
	e.Response = maskPersonal(w(e.Response))
	e.Excerpt = Excerpt(w(e.Excerpt))
	if !handleRe.MatchString(e.ResolvedBy) {
		e.ResolvedBy = maskPersonal(e.ResolvedBy)
	}
	e.SecretWithheld = e.SecretWithheld || found
	return e, nil
}
