package standin

import (
	"context"
	"encoding/json"
	"strconv"
)

// Album bounds of sendMediaGroup.
const (
	minAlbum = 2
	maxAlbum = 10
)

// inputMedia is one item of sendMediaGroup's media array.
type inputMedia struct {
	Type            string          `json:"type"`
	Media           string          `json:"media"`
	Caption         string          `json:"caption"`
	ParseMode       string          `json:"parse_mode"`
	CaptionEntities json.RawMessage `json:"caption_entities"`
}

// sendMediaGroup posts 2-10 photos or documents as one album: consecutive
// messages sharing a media_group_id. Files come as attach://<part> uploads,
// file ids or URLs. Flood limits count every item.
func (s *Server) sendMediaGroup(_ context.Context, req *request) reply {
	var items []inputMedia
	if err := json.Unmarshal([]byte(req.params["media"]), &items); err != nil {
		return badRequest("can't parse media JSON object").reply()
	}
	switch {
	case len(items) > maxAlbum:
		return badRequest("too much messages to send as an album").reply()
	case len(items) < minAlbum:
		// Telegram's wording for a one-item album was not found; this one is
		// the fake's own.
		return badRequest("media must contain %d-%d items", minAlbum, maxAlbum).reply()
	}
	captions := make([]caption, len(items))
	for i, it := range items {
		if it.Type != "photo" && it.Type != "document" {
			return badRequest("unsupported media type %q in the album", it.Type).reply()
		}
		var entities string
		if len(it.CaptionEntities) > 0 {
			entities = string(it.CaptionEntities)
		}
		c, aerr := parseCaption(it.Caption, it.ParseMode, entities)
		if aerr != nil {
			return aerr.reply()
		}
		captions[i] = c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.chats.resolvePost(req.params["chat_id"])
	if aerr != nil {
		return aerr.reply()
	}
	files := make([]media, len(items))
	for i, it := range items {
		if files[i], aerr = s.mediaLocked(it.Type, it.Media, upload{}, req.files); aerr != nil {
			return aerr.reply()
		}
	}
	replyTo, aerr := replyTarget(c, req.params["reply_parameters"])
	if aerr == nil {
		aerr = s.floodLocked(c.info.ID, len(items))
	}
	if aerr != nil {
		return aerr.reply()
	}
	group := strconv.FormatInt(13_000_000_000_000_000+int64(len(s.chats.sent)), 10)
	out := make([]*Message, len(items))
	var refs []msgRef
	for i := range items {
		m := captions[i].message(files[i])
		m.MediaGroupID, m.ReplyTo, m.Silent = group, replyTo, boolParam(req.params, "disable_notification")
		refs = append(refs, s.postLocked(c, m))
		out[i] = m
	}
	rep := okReply(out)
	rep.committed = refs
	return rep
}
