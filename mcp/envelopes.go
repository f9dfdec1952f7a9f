package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

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
func (s *Server) readEnvelope(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	id, ok := strings.CutPrefix(req.Params.URI, envelopePrefix)
	if !ok || id == "" {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	_, _, data, err := s.opts.Vault.GetText(id)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: string(data)}}}, nil
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
