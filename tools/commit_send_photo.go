package tools

import _ "embed"

//go:embed commit_send_photo.md
var sendPhotoDoc string

// ActionSendPhoto is the action of a photo's payload.
const ActionSendPhoto = "send_photo"

// SendPhoto is commit_send_photo: one photo (JPEG, PNG or GIF, at most 10 MB)
// with an optional caption. The approver sees the photo itself with the card.
func SendPhoto(u Uploader, m Media) Committer {
	return sendFile{name: "commit_send_photo", doc: sendPhotoDoc, action: ActionSendPhoto, kind: FilePhoto, uploader: u, media: m}
}
