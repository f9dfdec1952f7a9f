package tools

import (
	_ "embed"

	"github.com/countersign/countersign/action"
)

//go:embed commit_copy_message.md
var copyMessageDoc string

// CopyMessage is commit_copy_message: a copy of a message posted to another
// chat, with no link to the original.
func CopyMessage(r Reposter) Committer {
	return repost{name: "commit_copy_message", doc: copyMessageDoc, action: action.CopyMessage, verb: "copy", copy: true, reposter: r}
}
