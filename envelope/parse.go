package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/adrg/frontmatter"
	"gopkg.in/yaml.v3"
)

// yamlOnly is the one front matter format a note may use: "---" fences around YAML
// decoded by yaml.v3 (the library's default would be yaml.v2 and would also accept
// TOML and JSON).
var yamlOnly = frontmatter.NewFormat("---", "---", strictUnmarshal)

// Parse reads a note. The front matter is the source of truth: Status, NextAction and
// the resolution fields come from it, so a note resolved by hand in an editor reads as
// resolved. Response and Excerpt are read from their body lines when present, and are
// empty otherwise. Times come back in UTC.
//
// Parse is strict about the front matter, since a hand edit may have broken it. It
// returns an error wrapping ErrNoFrontMatter when the note does not start with one,
// ErrUnterminated when no "---" line closes it, ErrYAML for invalid YAML or an unknown
// or duplicate key, and ErrInvalid when operation_id is missing or malformed or status
// is not one of the three.
func Parse(data []byte) (Envelope, error) {
	var e Envelope
	body, err := frontmatter.MustParse(bytes.NewReader(data), &e, yamlOnly)
	switch {
	case errors.Is(err, frontmatter.ErrNotFound) && opensFrontMatter(data):
		return Envelope{}, ErrUnterminated
	case errors.Is(err, frontmatter.ErrNotFound):
		return Envelope{}, ErrNoFrontMatter
	case err != nil:
		return Envelope{}, err // from strictUnmarshal: wraps ErrYAML
	}
	if err := e.Validate(); err != nil {
		return Envelope{}, err
	}
	e.normalizeTimes()
	e.Response, e.Excerpt = bodyFacts(body)
	return e, nil
}

// strictUnmarshal decodes exactly one YAML document, rejecting unknown keys. An empty
// front matter decodes to nothing, and Validate then names the missing field.
func strictUnmarshal(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); errors.Is(err, io.EOF) {
		return nil
	} else if err != nil {
		return fmt.Errorf("%w: %v", ErrYAML, err)
	}
	// A further document needs a "---" or "..." marker; without one, skip the
	// second pass.
	if !bytes.Contains(data, []byte("---")) && !bytes.Contains(data, []byte("...")) {
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: more than one YAML document", ErrYAML)
	}
	return nil
}

// opensFrontMatter reports whether the first non-blank line is a "---" fence, the way
// the frontmatter library reads lines (trimmed of surrounding space).
func opensFrontMatter(data []byte) bool {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		switch string(bytes.TrimSpace(line)) {
		case "":
			continue
		case "---":
			return true
		}
		return false
	}
	return false
}

func (e *Envelope) normalizeTimes() {
	e.Created, e.Expires = e.Created.UTC(), e.Expires.UTC()
	if e.ResolvedAt != nil {
		at := e.ResolvedAt.UTC()
		e.ResolvedAt = &at
	}
}

// bodyFacts reads the first Service response and Excerpt lines of the body.
func bodyFacts(body []byte) (response, excerpt string) {
	var gotResponse, gotExcerpt bool
	for len(body) > 0 && !(gotResponse && gotExcerpt) {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte("\n"))
		s := string(bytes.TrimSpace(line))
		if v, ok := strings.CutPrefix(s, strings.TrimSpace(labelResponse)); ok && !gotResponse {
			response, gotResponse = uninline(strings.TrimSpace(v)), true
		}
		if v, ok := strings.CutPrefix(s, strings.TrimSpace(labelExcerpt)); ok && !gotExcerpt {
			excerpt, gotExcerpt = uninline(strings.TrimSpace(v)), true
		}
	}
	return response, excerpt
}
