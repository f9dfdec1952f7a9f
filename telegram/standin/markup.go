package standin

import (
	"bytes"
	"encoding/json"
	"strings"
)

// maxCallbackData is the longest callback_data, in bytes.
const maxCallbackData = 64

// buttonActions are the InlineKeyboardButton fields that give a button
// something to do; a button needs one.
var buttonActions = []string{
	"url", "callback_data", "web_app", "login_url", "switch_inline_query",
	"switch_inline_query_current_chat", "switch_inline_query_chosen_chat",
	"copy_text", "callback_game", "pay",
}

// parseMarkup validates reply_markup. It returns the inline keyboard as
// canonical JSON (the message echoes it back), or nil for no markup and
// for reply keyboards, which messages do not carry.
func parseMarkup(v string) (json.RawMessage, *apiError) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var markup map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &markup); err != nil {
		return nil, new(badRequest("can't parse reply keyboard markup JSON object"))
	}
	keyboard, ok := markup["inline_keyboard"]
	if !ok {
		return nil, nil
	}
	var rows [][]map[string]json.RawMessage
	if err := json.Unmarshal(keyboard, &rows); err != nil {
		return nil, new(badRequest(`Field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays`))
	}
	for _, row := range rows {
		for _, button := range row {
			if aerr := checkButton(button); aerr != nil {
				return nil, aerr
			}
		}
	}
	return canonicalJSON(v), nil
}

// forcesReply reports whether reply_markup is a ForceReply.
func forcesReply(v string) bool {
	var markup struct {
		ForceReply bool `json:"force_reply"`
	}
	return json.Unmarshal([]byte(v), &markup) == nil && markup.ForceReply
}

func checkButton(button map[string]json.RawMessage) *apiError {
	var text string
	if err := json.Unmarshal(button["text"], &text); err != nil {
		return new(badRequest(`can't parse InlineKeyboardButton: Can't find field "text"`))
	}
	var data string
	_ = json.Unmarshal(button["callback_data"], &data)
	if len(data) > maxCallbackData {
		return new(badRequest("BUTTON_DATA_INVALID"))
	}
	for _, action := range buttonActions {
		if hasAction(action, button[action]) {
			return nil
		}
	}
	return new(badRequest("can't parse InlineKeyboardButton: Text buttons are not allowed in the inline keyboard"))
}

// hasAction reports whether a button field gives the button an action.
// An empty callback_data or url, or a copy_text with empty text, does not.
func hasAction(name string, raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	switch name {
	case "callback_data", "url":
		var s string
		return json.Unmarshal(raw, &s) == nil && s != ""
	case "copy_text":
		var c struct{ Text string }
		return json.Unmarshal(raw, &c) == nil && c.Text != ""
	}
	return true
}

// canonicalJSON re-encodes valid JSON with sorted keys and no spaces, so
// equal markups compare equal byte for byte.
func canonicalJSON(v string) json.RawMessage {
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(x)
	return bytes.TrimRight(buf.Bytes(), "\n")
}
