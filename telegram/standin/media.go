package standin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"image"
	_ "image/gif" // photos may be GIF, JPEG or PNG
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"path"
	"strings"
)

// This file covers sendPhoto and sendDocument: the file as a multipart upload,
// a file_id the server issued, or an HTTP URL registered with SetURLContent.

// Limits of the public Bot API on uploads (sendPhoto and sendDocument docs).
const (
	DefaultMaxPhotoUpload    = 10 << 20
	DefaultMaxDocumentUpload = 50 << 20
)

// maxCaptionLen is the longest caption, in UTF-16 code units after entity
// parsing.
const maxCaptionLen = 1024

// UploadLimits bounds uploaded files; zero fields take the Bot API's limits.
// Tests lower them to check the refusal without sending megabytes.
type UploadLimits struct {
	// Photo is the largest photo upload in bytes; default 10 MB.
	Photo int
	// Document is the largest document upload in bytes; default 50 MB.
	Document int
}

func (l UploadLimits) withDefaults() UploadLimits {
	if l.Photo <= 0 {
		l.Photo = DefaultMaxPhotoUpload
	}
	if l.Document <= 0 {
		l.Document = DefaultMaxDocumentUpload
	}
	return l
}

var (
	errCaptionTooLong = badRequest("message caption is too long")
	errEmptyFile      = badRequest("file must be non-empty")
	errWrongFileID    = badRequest("wrong file identifier/HTTP URL specified")
	errFileTypeDiffer = badRequest("type of file mismatch")
	errURLContent     = badRequest("failed to get HTTP URL content")
	errImageProcess   = badRequest("IMAGE_PROCESS_FAILED")
	errPhotoDims      = badRequest("PHOTO_INVALID_DIMENSIONS")
)

// storedFile is a file the server issued ids for: a photo with its sizes, or
// a document.
type storedFile struct {
	photo []PhotoSize
	doc   *Document
	// data and name are the content and name it came with, for getFile and
	// the download of its file_path.
	data []byte
	name string
}

// media is a resolved photo or document, ready to go into a Message.
type media struct {
	photo []PhotoSize
	doc   *Document
}

// SetURLContent makes url serve content to sendPhoto, sendDocument and
// sendMediaGroup, as Telegram downloads an HTTP URL given instead of a file.
// Other URLs answer "failed to get HTTP URL content"; the fake never goes to
// the network.
func (s *Server) SetURLContent(url string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.urls[url] = bytes.Clone(content)
}

func (s *Server) sendPhoto(_ context.Context, req *request) reply {
	return s.sendMedia(req, "photo")
}

func (s *Server) sendDocument(_ context.Context, req *request) reply {
	return s.sendMedia(req, "document")
}

// sendMedia posts one photo or document with its caption.
func (s *Server) sendMedia(req *request, kind string) reply {
	caption, aerr := readCaption(req.params)
	if aerr != nil {
		return aerr.reply()
	}
	markup, aerr := parseMarkup(req.params["reply_markup"])
	if aerr != nil {
		return aerr.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.chats.resolvePost(req.params["chat_id"])
	var file media
	if aerr == nil {
		file, aerr = s.mediaLocked(kind, req.params[kind], req.files[kind], req.files)
	}
	var replyTo int
	if aerr == nil {
		replyTo, aerr = replyTarget(c, req.params["reply_parameters"])
	}
	if aerr == nil {
		aerr = s.floodLocked(c.info.ID, 1)
	}
	if aerr != nil {
		return aerr.reply()
	}
	m := caption.message(file)
	m.ReplyMarkup, m.ReplyTo, m.Silent = markup, replyTo, boolParam(req.params, "disable_notification")
	ref := s.postLocked(c, m)
	rep := okReply(m)
	rep.committed = []msgRef{ref}
	return rep
}

// caption is a parsed caption with its raw form.
type caption struct {
	raw, parseMode, text string
	entities             []Entity
}

func (c caption) message(file media) *Message {
	return &Message{
		Photo: file.photo, Document: file.doc, Caption: c.text, CaptionEntities: c.entities,
		RawText: c.raw, ParseMode: c.parseMode,
	}
}

// readCaption parses caption, parse_mode and caption_entities.
func readCaption(p map[string]string) (caption, *apiError) {
	return parseCaption(p["caption"], p["parse_mode"], p["caption_entities"])
}

func parseCaption(raw, parseMode, entities string) (caption, *apiError) {
	c := caption{raw: raw, parseMode: parseMode}
	var aerr *apiError
	c.text, c.entities, aerr = parseText(raw, parseMode)
	if aerr != nil {
		return c, aerr
	}
	if parseMode == "" && entities != "" {
		if err := json.Unmarshal([]byte(entities), &c.entities); err != nil {
			return c, new(badRequest("can't parse caption entities JSON object"))
		}
	}
	if utf16Len(c.text) > maxCaptionLen {
		return c, &errCaptionTooLong
	}
	return c, nil
}

// mediaLocked resolves the file of a photo or document: the upload in the
// field itself, or the field's string (attach://<part>, an HTTP URL, a
// file_id).
func (s *Server) mediaLocked(kind, value string, up upload, files map[string]upload) (media, *apiError) {
	switch {
	case up.name != "":
		return s.fromBytesLocked(kind, up.name, up.data, true)
	case value == "":
		return media{}, new(badRequest("there is no %s in the request", kind))
	case strings.HasPrefix(value, "attach://"):
		part, ok := files[strings.TrimPrefix(value, "attach://")]
		if !ok {
			return media{}, &errWrongFileID
		}
		return s.fromBytesLocked(kind, part.name, part.data, true)
	case strings.HasPrefix(value, "http://") || strings.HasPrefix(value, "https://"):
		content, ok := s.urls[value]
		if !ok {
			return media{}, &errURLContent
		}
		return s.fromBytesLocked(kind, path.Base(value), content, false)
	}
	f, ok := s.files[value]
	switch {
	case !ok:
		return media{}, &errWrongFileID
	case (kind == "photo") != (f.photo != nil):
		return media{}, &errFileTypeDiffer
	}
	if f.doc != nil {
		d := *f.doc
		return media{doc: &d}, nil
	}
	return media{photo: f.photo}, nil
}

// fromBytesLocked checks new content and issues its file ids.
func (s *Server) fromBytesLocked(kind, name string, data []byte, uploaded bool) (media, *apiError) {
	if len(data) == 0 {
		return media{}, &errEmptyFile
	}
	limit := s.uploads.Document
	if kind == "photo" {
		limit = s.uploads.Photo
	}
	if uploaded && len(data) > limit {
		return media{}, &errEntityTooLarge
	}
	sum := sha256.Sum256(data)
	if kind != "photo" {
		id, unique := fileIDs(documentIDPrefix, sum, "d")
		d := &Document{FileID: id, FileUniqueID: unique, FileName: name, MimeType: mimeType(name), FileSize: len(data)}
		s.files[id] = &storedFile{doc: d, data: bytes.Clone(data), name: name}
		return media{doc: d}, nil
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return media{}, &errImageProcess
	}
	w, h := cfg.Width, cfg.Height
	if w+h > 10000 || max(w, h) > 20*min(w, h) {
		return media{}, &errPhotoDims
	}
	sizes := photoSizes(sum, w, h, len(data))
	for _, p := range sizes {
		s.files[p.FileID] = &storedFile{photo: sizes, data: bytes.Clone(data), name: name}
	}
	return media{photo: sizes}, nil
}

// File id prefixes as Telegram's look for photos and documents; the rest of
// an id comes from the content.
const (
	photoIDPrefix    = "AgACAgIAAxkBAAI"
	documentIDPrefix = "BQACAgIAAxkBAAI"
)

// fileIDs derives a file_id and file_unique_id from the content's digest and
// the variant (a photo size, or "d" for a document), so the same bytes always
// give the same ids.
func fileIDs(prefix string, sum [sha256.Size]byte, variant string) (id, unique string) {
	h := sha256.Sum256(append(sum[:], variant...))
	return prefix + base64.RawURLEncoding.EncodeToString(h[:24]), "AQAD" + base64.RawURLEncoding.EncodeToString(h[:9])
}

// photoBoxes are the sizes Telegram scales a photo into, smallest first.
var photoBoxes = []struct {
	variant string
	side    int
}{{"s", 90}, {"m", 320}, {"x", 800}, {"y", 1280}}

// photoSizes lists a w×h photo of size bytes as Telegram does: one entry per
// box up to the first that holds the whole photo. The sizes of scaled entries
// are estimates in proportion to their area.
func photoSizes(sum [sha256.Size]byte, w, h, size int) []PhotoSize {
	var out []PhotoSize
	for _, box := range photoBoxes {
		pw, ph := w, h
		if longest := max(w, h); longest > box.side {
			pw, ph = max(1, w*box.side/longest), max(1, h*box.side/longest)
		}
		id, unique := fileIDs(photoIDPrefix, sum, box.variant)
		out = append(out, PhotoSize{
			FileID: id, FileUniqueID: unique, Width: pw, Height: ph,
			FileSize: max(1, int(int64(size)*int64(pw*ph)/int64(w*h))),
		})
		if pw == w && ph == h {
			break
		}
	}
	return out
}

// mimeTypes is the mime_type Telegram reports for common extensions; the fake
// does not depend on the system's MIME tables.
var mimeTypes = map[string]string{
	".pdf": "application/pdf", ".txt": "text/plain", ".md": "text/markdown", ".csv": "text/csv",
	".json": "application/json", ".xml": "application/xml", ".html": "text/html", ".zip": "application/zip",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
}

func mimeType(name string) string {
	if t, ok := mimeTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "application/octet-stream"
}

// File returns the photo sizes or document the server issued fileID for.
func (s *Server) File(fileID string) (photo []PhotoSize, doc *Document, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[fileID]
	if !ok {
		return nil, nil, false
	}
	if f.doc != nil {
		d := *f.doc
		return nil, &d, true
	}
	return append([]PhotoSize(nil), f.photo...), nil, true
}

// getFile answers a file_id the server issued with its file_path, under which
// the content is served at /file/bot<token>/<file_path>, as the Bot API does.
func (s *Server) getFile(_ context.Context, req *request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.params["file_id"]
	f, ok := s.files[id]
	if !ok {
		return new(badRequest("invalid file_id")).reply()
	}
	unique := ""
	for _, p := range f.photo {
		if p.FileID == id {
			unique = p.FileUniqueID
		}
	}
	if f.doc != nil {
		unique = f.doc.FileUniqueID
	}
	return okReply(map[string]any{"file_id": id, "file_unique_id": unique, "file_size": len(f.data), "file_path": filePath(id, f)})
}

// filePath is where a file's content is served: photos/… or documents/…,
// named by its id, with its extension.
func filePath(id string, f *storedFile) string {
	if f.doc != nil {
		return "documents/" + id + path.Ext(f.name)
	}
	return "photos/" + id + path.Ext(f.name)
}

// serveFile answers GET /file/bot<token>/<file_path> with the content.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/bot")
	token, fp, _ := strings.Cut(rest, "/")
	if token != s.token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	var data []byte
	for id, f := range s.files {
		if filePath(id, f) == fp {
			data = f.data
		}
	}
	s.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// PushFile queues a "message" update: user userID sent a photo (kind
// "photo") or a document (any other kind) named name with caption in the
// private chat, as a person attaches a file with a command as its caption.
// The server issues its ids, so getFile and the download serve it. It
// returns the update_id.
func (s *Server) PushFile(userID int64, kind, name string, data []byte, caption string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.get(userID)
	c.known = true
	m, aerr := s.fromBytesLocked(kind, name, data, true)
	if aerr != nil {
		panic("standin: PushFile: " + aerr.Description)
	}
	msg := map[string]any{"message_id": c.nextID(), "from": s.userForLocked(userID), "chat": c.info, "date": s.now().Unix(), "caption": caption}
	if m.doc != nil {
		msg["document"] = m.doc
	} else {
		msg["photo"] = m.photo
	}
	if strings.HasPrefix(caption, "/") {
		cmd := strings.Fields(caption)[0]
		msg["caption_entities"] = []Entity{{Type: "bot_command", Offset: 0, Length: utf16Len(cmd)}}
	}
	return s.pushLocked("message", msg)
}
