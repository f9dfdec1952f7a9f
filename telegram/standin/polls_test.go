package standin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/telegram/standin"
)

func options(texts ...string) []models.InputPollOption {
	var out []models.InputPollOption
	for _, t := range texts {
		out = append(out, models.InputPollOption{Text: t})
	}
	return out
}

func TestSendPoll(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	public := false
	m, err := b.SendPoll(ctx, &bot.SendPollParams{
		ChatID: -4001, Question: "Ship on Friday?", Options: options("Yes", "No", "Monday"),
		IsAnonymous: &public, AllowsMultipleAnswers: true,
	})
	if err != nil {
		t.Fatalf("SendPoll: %v", err)
	}
	p := m.Poll
	if p == nil || p.ID == "" || p.Question != "Ship on Friday?" || len(p.Options) != 3 || p.Options[2].Text != "Monday" ||
		p.IsAnonymous || p.Type != "regular" || !p.AllowsMultipleAnswers || p.IsClosed || p.TotalVoterCount != 0 {
		t.Fatalf("poll = %+v, want the question, 3 options, public, multiple answers", p)
	}
	anonymous, err := b.SendPoll(ctx, &bot.SendPollParams{ChatID: -4001, Question: "Again?", Options: options("a", "b")})
	if err != nil || !anonymous.Poll.IsAnonymous || anonymous.Poll.ID == p.ID {
		t.Errorf("default poll = %+v, %v; want anonymous with a new id", anonymous.Poll, err)
	}
	quiz, err := b.SendPoll(ctx, &bot.SendPollParams{ChatID: -4001, Question: "2+2?", Options: options("3", "4"), Type: "quiz", CorrectOptionID: 1})
	if err != nil || quiz.Poll.Type != "quiz" || quiz.Poll.CorrectOptionID != 1 {
		t.Errorf("quiz = %+v, %v; want correct option 1", quiz.Poll, err)
	}
	if stored, _ := srv.Message(-4001, m.ID); stored.Poll == nil || stored.Poll.Question != "Ship on Friday?" {
		t.Errorf("stored = %+v, want the poll", stored)
	}
}

func TestSendPollRejections(t *testing.T) {
	twelve := options(strings.Split("a b c d e f g h i j k l", " ")...)
	tests := []struct {
		name     string
		question string
		options  []models.InputPollOption
		desc     string
	}{
		{"empty question", " ", options("a", "b"), "poll question must be non-empty"},
		{"question of 301 characters", strings.Repeat("é", 301), options("a", "b"), "poll question length must not exceed 300"},
		{"one option", "Q?", options("a"), "poll must have at least 2 option"},
		{"thirteen options", "Q?", append(twelve, models.InputPollOption{Text: "m"}), "poll can't have more than 12 options"},
		{"empty option", "Q?", options("a", ""), "poll options must be non-empty"},
		{"option of 101 characters", "Q?", options("a", strings.Repeat("😀", 101)), "poll options length must not exceed 100"},
	}
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.SendPoll(context.Background(), &bot.SendPollParams{ChatID: 7, Question: tt.question, Options: tt.options})
			if !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), "Bad Request: "+tt.desc) {
				t.Errorf("error = %v, want %q", err, tt.desc)
			}
		})
	}
	if _, err := b.SendPoll(context.Background(), &bot.SendPollParams{ChatID: 7, Question: strings.Repeat("é", 300), Options: twelve}); err != nil {
		t.Errorf("300-character question and 12 options: %v, want accepted", err)
	}
	if n := len(srv.Messages(7)); n != 1 {
		t.Errorf("messages = %d, want only the accepted poll", n)
	}
}
