package verifier

import (
	"context"
	"strings"
)

// duplicates stops a text already sent, or awaiting approval, to the same target
// within the duplicate window. Texts compare as their recipient reads them (Seen:
// markup rendered in each text's own parse mode, characters that show nothing
// removed, one Unicode form, runs of white space as one space) and without regard
// to case, so that a zero-width space or an empty tag does not make a resend new.
// A history that cannot be read stops too: a duplicate that could not be ruled out
// is not let through. The operation the payload already is (Input.Operation)
// is no duplicate of itself.
func (c Checker) duplicates(ctx context.Context, p *payload) []finding {
	text := Seen(p.in.Text, p.in.ParseMode)
	if text == "" && len(p.in.Files) == 0 {
		return nil // schema reports the empty text
	}
	files := make([]string, len(p.in.Files))
	for i, f := range p.in.Files {
		files[i] = f.SHA256
	}
	now := c.clock()
	sent, err := c.history.Recent(ctx, p.in.Target, now.Add(-c.cfg.DuplicateWindow), SeenKey(p.in.Text, p.in.ParseMode, files))
	if err != nil {
		return []finding{stopf("history unavailable: %v", err)}
	}
	var match *Sent
	for i, s := range sent {
		if p.in.Operation != "" && s.OperationID == p.in.Operation {
			continue // the payload itself, checked again as it is asked again
		}
		if strings.EqualFold(Seen(s.Text, s.ParseMode), text) && sameFiles(s.Files, p.in.Files) && (match == nil || s.At.After(match.At)) {
			match = &sent[i]
		}
	}
	if match == nil {
		return nil
	}
	what := "text"
	if len(p.in.Files) > 0 {
		what = "files and caption"
	}
	return []finding{stopf("same %s as operation %s (%s %s)",
		what, match.OperationID, match.State, match.At.UTC().Format("2006-01-02 15:04 UTC"))}
}

// sameFiles reports whether sent sent the files of in, by content and order.
func sameFiles(sent []string, in []File) bool {
	if len(sent) != len(in) {
		return false
	}
	for i, f := range in {
		if sent[i] != f.SHA256 {
			return false
		}
	}
	return true
}
