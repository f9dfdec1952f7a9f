package tools

import (
	_ "embed"

	"github.com/countersign/countersign/action"
)

//go:embed commit_send_document.md
var sendDocumentDoc string

// SendDocument is commit_send_document: one file of any kind, at most 50 MB,
// with an optional caption. The card names it, with its size and SHA-256.
func SendDocument(u Uploader, m Media) Committer {
	return sendFile{name: "commit_send_document", doc: sendDocumentDoc, action: action.SendDocument, kind: action.FileDocument, uploader: u, media: m}
}
