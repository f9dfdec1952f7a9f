package tools

import (
	_ "embed"

	"github.com/countersign/countersign/action"
)

//go:embed commit_send_photo.md
var sendPhotoDoc string

// SendPhoto is commit_send_photo: one photo (JPEG, PNG or GIF, at most 10 MB)
// with an optional caption. The approver sees the photo itself with the card.
func SendPhoto(u Uploader, m Media) Committer {
	return sendFile{name: "commit_send_photo", doc: sendPhotoDoc, action: action.SendPhoto, kind: action.FilePhoto, uploader: u, media: m}
}
