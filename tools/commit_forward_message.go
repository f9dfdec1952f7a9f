package tools

import (
	_ "embed"

	"github.com/countersign/countersign/action"
)

//go:embed commit_forward_message.md
var forwardMessageDoc string

// ForwardMessage is commit_forward_message: a message forwarded to another
// chat, its author shown.
func ForwardMessage(r Reposter) Committer {
	return repost{name: "commit_forward_message", doc: forwardMessageDoc, action: action.ForwardMessage, verb: "forward", reposter: r}
}
