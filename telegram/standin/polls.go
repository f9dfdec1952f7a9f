package standin

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Poll bounds of the Bot API (sendPoll): characters, not UTF-16 units.
const (
	maxPollQuestion = 300
	maxPollOption   = 100
	minPollOptions  = 2
	maxPollOptions  = 12
)

// The descriptions follow tdlib's poll checks, which the Bot API passes on
// with a lower-case first letter.
var (
	errPollQuestionEmpty = badRequest("poll question must be non-empty")
	errPollQuestionLong  = badRequest("poll question length must not exceed %d", maxPollQuestion)
	errPollOptionEmpty   = badRequest("poll options must be non-empty")
	errPollOptionLong    = badRequest("poll options length must not exceed %d", maxPollOption)
	errPollFewOptions    = badRequest("poll must have at least %d option", minPollOptions)
	errPollManyOptions   = badRequest("poll can't have more than %d options", maxPollOptions)
)

// pollOption is an InputPollOption; a bare string is also accepted, as the
// Bot API did before options became objects.
type pollOption struct {
	Text string `json:"text"`
}

func (o *pollOption) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &o.Text); err == nil {
		return nil
	}
	type plain pollOption
	return json.Unmarshal(b, (*plain)(o))
}

// readPoll parses and checks sendPoll's question, options and type.
func readPoll(p map[string]string) (*Poll, *apiError) {
	question, entities, aerr := parseText(p["question"], p["question_parse_mode"])
	if aerr != nil {
		return nil, aerr
	}
	var options []pollOption
	if err := json.Unmarshal([]byte(p["options"]), &options); err != nil {
		return nil, new(badRequest("can't parse options JSON object"))
	}
	switch n := utf8.RuneCountInString(question); {
	case strings.TrimSpace(question) == "":
		return nil, &errPollQuestionEmpty
	case n > maxPollQuestion:
		return nil, &errPollQuestionLong
	case len(options) < minPollOptions:
		return nil, &errPollFewOptions
	case len(options) > maxPollOptions:
		return nil, &errPollManyOptions
	}
	poll := &Poll{Question: question, QuestionEntities: entities, IsAnonymous: true, Type: "regular"}
	for _, o := range options {
		switch {
		case strings.TrimSpace(o.Text) == "":
			return nil, &errPollOptionEmpty
		case utf8.RuneCountInString(o.Text) > maxPollOption:
			return nil, &errPollOptionLong
		}
		poll.Options = append(poll.Options, PollOption{Text: o.Text})
	}
	if v, ok := p["is_anonymous"]; ok {
		poll.IsAnonymous, _ = strconv.ParseBool(v)
	}
	return poll, readPollType(p, poll)
}

// readPollType applies type, allows_multiple_answers and, for a quiz,
// correct_option_id (a regular poll ignores it: go-telegram/bot always sends
// it).
func readPollType(p map[string]string, poll *Poll) *apiError {
	switch p["type"] {
	case "", "regular":
		poll.AllowsMultipleAnswers = boolParam(p, "allows_multiple_answers")
	case "quiz":
		poll.Type = "quiz"
		id, ok := intParam(p, "correct_option_id", -1)
		if !ok || id < 0 || int(id) >= len(poll.Options) {
			return new(badRequest("wrong correct option id specified"))
		}
		poll.CorrectOptionID = new(int(id))
	default:
		return new(badRequest("wrong poll type specified"))
	}
	return nil
}

// sendPoll posts a poll; nobody votes in the fake.
func (s *Server) sendPoll(_ context.Context, req *request) reply {
	poll, aerr := readPoll(req.params)
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
	s.polls++
	poll.ID = strconv.FormatInt(5_000_000_000_000_000_000+int64(s.polls), 10)
	m := &Message{Poll: poll, ReplyMarkup: markup, ReplyTo: replyTo, Silent: boolParam(req.params, "disable_notification")}
	ref := s.postLocked(c, m)
	rep := okReply(m)
	rep.committed = []msgRef{ref}
	return rep
}
