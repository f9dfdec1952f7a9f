package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/vault"
)

// envelopePrefix begins the URI of an envelope resource; the operation id ends it.
const envelopePrefix = "countersign://envelopes/"

// addEnvelopes offers every envelope by the template, so that a follow-up
// session reads any operation's note by its id.
func (s *Server) addEnvelopes() {
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: envelopePrefix + "{operation_id}", Name: "envelope",
		Title: "Unknown-outcome envelope", MIMEType: "text/markdown",
		Description: "The vault's note of an operation whose outcome was unknown: what is known, what is not, and how to verify."}, s.readEnvelope)
}

// readEnvelope answers a read of an envelope resource with its note as it is.
func (s *Server) readEnvelope(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	id, ok := strings.CutPrefix(req.Params.URI, envelopePrefix)
	if !ok || id == "" {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	_, _, data, err := s.note(ctx, id)
	if errors.Is(err, errNoteAwaited) {
		return nil, err
	}
	if err != nil {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: string(data)}}}, nil
}

// errNoteAwaited answers a read of the note of an unknown outcome that is not in
// the vault after Options.NoteWait: the outcome is unknown all the same.
var errNoteAwaited = errors.New("its outcome is unknown and its note is not in the vault yet (a full disk, or a process that stopped, leaves it to the next start); verify it before any retry: request_verification asks the approvers")

// note is the vault's note of operation id, as Vault.GetText gives it. The
// process that sends records an unknown outcome in the journal first and writes
// its note just after, so an agent told "unknown, verify" may ask for the note
// before it is there: while the journal says the outcome is unknown, note waits
// for it, up to Options.NoteWait, and then says why there is none.
func (s *Server) note(ctx context.Context, id string) (envelope.Envelope, string, []byte, error) {
	e, path, data, err := s.opts.Vault.GetText(id)
	if !errors.Is(err, vault.ErrNotFound) {
		return e, path, data, err
	}
	if op, jerr := s.opts.Journal.Operation(ctx, id); jerr != nil || op.State != journal.Unknown {
		return e, path, data, err
	}
	s.opts.Logger.Info("the note of an unknown outcome is not in the vault yet; waiting for it", "op", id, "up_to", s.opts.NoteWait)
	ctx, cancel := context.WithTimeout(ctx, s.opts.NoteWait)
	defer cancel()
	tick := time.NewTicker(s.opts.PollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return e, path, data, fmt.Errorf("mcp: %s: %w", id, errNoteAwaited)
		case <-tick.C:
		}
		if e, path, data, err = s.opts.Vault.GetText(id); !errors.Is(err, vault.ErrNotFound) {
			return e, path, data, err
		}
	}
}

// Watch keeps the resource list equal to the unresolved envelopes until ctx ends,
// listing the vault every Options.WatchEvery: a new unknown outcome (made here or
// by the bot) appears, a resolved one goes, and each change is a list-changed
// notification to the sessions.
func (s *Server) Watch(ctx context.Context) {
	tick := time.NewTicker(s.opts.WatchEvery)
	defer tick.Stop()
	for {
		s.refresh()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// refresh makes the resource list the unresolved envelopes.
func (s *Server) refresh() {
	notes, _, err := s.opts.Vault.List(vault.Filter{Unresolved: true})
	if err != nil {
		s.opts.Logger.Warn("vault not listed for the MCP resources", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := map[string]bool{}
	for _, n := range notes {
		e := n.Envelope
		now[e.OperationID] = true
		if s.listed[e.OperationID] {
			continue
		}
		s.listed[e.OperationID] = true
		s.srv.AddResource(&sdk.Resource{URI: envelopePrefix + e.OperationID, Name: e.OperationID, MIMEType: "text/markdown",
			Title:       fmt.Sprintf("Unknown outcome: %s to %s", e.Action, e.Target),
			Description: fmt.Sprintf("%s of %s to %s, created %s: verify before any retry", e.Tool, e.OperationID, e.Target, e.Created.Format(time.RFC3339))},
			s.readEnvelope)
	}
	var gone []string
	for id := range s.listed {
		if !now[id] {
			gone = append(gone, envelopePrefix+id)
			delete(s.listed, id)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveResources(gone...)
	}
}
