package action

// Fix is a repair by schema that keeps what the human approved: the same text to
// the same chat, delivered differently.
type Fix struct {
	// Target replaces the chat id, when the chat moved (a group became a supergroup).
	Target string `json:"target,omitempty"`
	// PlainText drops the parse mode, when the service rejected the entities.
	PlainText bool `json:"plain_text,omitempty"`
}

// Apply returns the payload as it should be delivered after the fix.
func (f Fix) Apply(p Payload) Payload {
	if f.Target != "" {
		p.Target = f.Target
	}
	if f.PlainText {
		p.ParseMode = ""
	}
	return p
}
