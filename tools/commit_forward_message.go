package tools

import _ "embed"

//go:embed commit_forward_message.md
var forwardMessageDoc string

// ActionForwardMessage is the action of a forward's payload.
const ActionForwardMessage = "forward_message"

// ForwardMessage is commit_forward_message: a message forwarded to another
// chat, its author shown.
func ForwardMessage(r Reposter) Committer {
	return repost{name: "commit_forward_message", doc: forwardMessageDoc, action: ActionForwardMessage, verb: "forward", reposter: r}
}
