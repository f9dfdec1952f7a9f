package demo

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/telegram/standin"
)

// markup is the part of a reply_markup a phone draws: an inline keyboard.
type markup struct {
	InlineKeyboard [][]struct {
		Text         string `json:"text"`
		CallbackData string `json:"callback_data"`
		URL          string `json:"url"`
		WebApp       *struct {
			URL string `json:"url"`
		} `json:"web_app"`
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
			b := Button{Text: k.Text, Data: k.CallbackData, URL: k.URL}
			if k.WebApp != nil {
				b.URL = webAppURL(k.WebApp.URL)
			}
			r = append(r, b)
		}
		b.Buttons = append(b.Buttons, r)
	}
	return b
}

// webAppURL is where the demo's page opens a web_app button: the page's
// /webapp, which adds the init data Telegram would (Scene.serveWebApp); ""
// for a Mini App that is not the bot's review page.
func webAppURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(u.Path, review.Path+"/") {
		return ""
	}
	return "/webapp?to=" + url.QueryEscape(u.Path)
}
