package demo

import (
	"encoding/json"

	"github.com/countersign/countersign/telegram/standin"
)

// markup is the part of a reply_markup a phone draws: an inline keyboard.
type markup struct {
	InlineKeyboard [][]struct {
		Text         string `json:"text"`
		CallbackData string `json:"callback_data"`
		URL          string `json:"url"`
	} `json:"inline_keyboard"`
}

// bubble is m as a phone draws it. A reply markup that does not parse is
// drawn as none: the fake server accepted it, and the text still shows.
func bubble(m standin.Message) Bubble {
	b := Bubble{ID: m.MessageID, Mine: m.Incoming, Text: m.Text, Edited: m.Edits > 0, ReplyTo: m.ReplyTo, AsksReply: m.AsksReply, Lost: m.ReplyLost}
	switch {
	case len(m.Photo) > 0:
		b.Media, b.Text = "photo", m.Caption
	case m.Document != nil:
		b.Media, b.Text = "document", m.Caption
	case m.Poll != nil:
		b.Media, b.Text = "poll", m.Poll.Question
	}
	var mk markup
	if len(m.ReplyMarkup) == 0 || json.Unmarshal(m.ReplyMarkup, &mk) != nil {
		return b
	}
	for _, row := range mk.InlineKeyboard {
		var r []Button
		for _, k := range row {
			r = append(r, Button{Text: k.Text, Data: k.CallbackData, URL: k.URL})
		}
		b.Buttons = append(b.Buttons, r)
	}
	return b
}
