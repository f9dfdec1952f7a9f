package tools

import _ "embed"

//go:embed commit_copy_message.md
var copyMessageDoc string

// ActionCopyMessage is the action of a copy's payload.
const ActionCopyMessage = "copy_message"

// CopyMessage is commit_copy_message: a copy of a message posted to another
// chat, with no link to the original.
func CopyMessage(r Reposter) Committer {
	return repost{name: "commit_copy_message", doc: copyMessageDoc, action: ActionCopyMessage, verb: "copy", copy: true, reposter: r}
}
