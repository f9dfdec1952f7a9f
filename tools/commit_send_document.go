package tools

import _ "embed"

//go:embed commit_send_document.md
var sendDocumentDoc string

// ActionSendDocument is the action of a document's payload.
const ActionSendDocument = "send_document"

// SendDocument is commit_send_document: one file of any kind, at most 50 MB,
// with an optional caption. The card names it, with its size and SHA-256.
func SendDocument(u Uploader, m Media) Committer {
	return sendFile{name: "commit_send_document", doc: sendDocumentDoc, action: ActionSendDocument, kind: FileDocument, uploader: u, media: m}
}
