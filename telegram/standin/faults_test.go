package standin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"

	"github.com/countersign/countersign/telegram/standin"
)

func TestFaultsOnSendMessage(t *testing.T) {
	tests := []struct {
		name         string
		fault        standin.Fault
		check        func(t *testing.T, err error)
		wantMessages int
		wantStatus   int
	}{
		{
			name:  "429 with retry_after",
			fault: standin.TooManyRequests(34),
			check: func(t *testing.T, err error) {
				var tmr *bot.TooManyRequestsError
				if !errors.As(err, &tmr) || tmr.RetryAfter != 34 {
					t.Errorf("error = %v, want TooManyRequestsError with RetryAfter 34", err)
				}
			},
			wantStatus: 429,
		},
		{
			name:  "403 blocked",
			fault: standin.BotBlocked(),
			check: func(t *testing.T, err error) {
				if !errors.Is(err, bot.ErrorForbidden) {
					t.Errorf("error = %v, want ErrorForbidden", err)
				}
			},
			wantStatus: 403,
		},
		{
			name:  "migrated group",
			fault: standin.MigrateTo(-1001557912345),
			check: func(t *testing.T, err error) {
				var me *bot.MigrateError
				if !errors.As(err, &me) || me.MigrateToChatID != -1001557912345 {
					t.Errorf("error = %v, want MigrateError to -1001557912345", err)
				}
			},
			wantStatus: 400,
		},
		{
			name:  "502 JSON",
			fault: standin.BadGateway(),
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway") {
					t.Errorf("error = %v, want the 502 description", err)
				}
			},
			wantStatus: 502,
		},
		{
			name:  "502 nginx HTML",
			fault: standin.BadGatewayHTML(),
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "error decode response body") {
					t.Errorf("error = %v, want a decode error", err)
				}
			},
			wantStatus: 502,
		},
		{
			name:  "accept then drop",
			fault: standin.AcceptThenDrop(),
			check: func(t *testing.T, err error) {
				if err == nil {
					t.Error("error = nil, want a connection error")
				}
			},
			wantMessages: 1,
		},
		{
			name:  "drop before accept",
			fault: standin.DropBeforeAccept(),
			check: func(t *testing.T, err error) {
				if err == nil {
					t.Error("error = nil, want a connection error")
				}
			},
		},
		{
			name:  "delay then answer",
			fault: standin.Delay(50 * time.Millisecond),
			check: func(t *testing.T, err error) {
				if err != nil {
					t.Errorf("error = %v, want success", err)
				}
			},
			wantMessages: 1,
			wantStatus:   200,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, standin.Options{})
			b, _ := newBot(t, srv, 3*time.Second)
			in := srv.Inject(tt.fault.For("sendMessage"))

			_, err := sendText(context.Background(), b, 222, "Approve op 42?")
			tt.check(t, err)

			msgs := srv.Messages(222)
			if len(msgs) != tt.wantMessages {
				t.Fatalf("messages = %d, want %d", len(msgs), tt.wantMessages)
			}
			if len(msgs) == 1 && msgs[0].ReplyLost != (tt.wantStatus == 0) {
				t.Errorf("ReplyLost = %v, want %v", msgs[0].ReplyLost, tt.wantStatus == 0)
			}
			waitFor(t, srv, "the call to finish", func(s *standin.Server) bool { return s.CallsTo("sendMessage")[0].Done })
			call := srv.CallsTo("sendMessage")[0]
			if call.Status != tt.wantStatus || call.Fault != tt.fault.Action || in.Fired() != 1 {
				t.Errorf("call status %d fault %v fired %d, want %d %v 1", call.Status, call.Fault, in.Fired(), tt.wantStatus, tt.fault.Action)
			}
			if _, err := sendText(context.Background(), b, 222, "again"); err != nil {
				t.Errorf("send after the one-shot fault: %v", err)
			}
		})
	}
}

func TestAcceptThenHangReturnsWhenClientGivesUp(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	srv.Inject(standin.AcceptThenHang().For("sendMessage"))

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := sendText(ctx, b, 222, "Approve op 42?")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
	if msgs := srv.Messages(222); len(msgs) != 1 || !msgs[0].ReplyLost {
		t.Errorf("messages = %+v, want one with its reply lost", msgs)
	}
	waitFor(t, srv, "the hung call to end", func(s *standin.Server) bool { return s.CallsTo("sendMessage")[0].Done })
}

func TestCloseDoesNotWaitForHungCall(t *testing.T) {
	srv := standin.New(standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	srv.Inject(standin.AcceptThenHang())
	errc := make(chan error, 1)
	go func() {
		_, err := sendText(context.Background(), b, 222, "hangs")
		errc <- err
	}()
	waitFor(t, srv, "the message", func(s *standin.Server) bool { return len(s.Messages(222)) == 1 })

	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	receive(t, closed)
	if err := receive(t, errc); err == nil {
		t.Error("client error = nil, want the dropped connection")
	}
}

func TestDelayLongerThanClientTimeoutAcceptsNothing(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	srv.Inject(standin.Delay(time.Minute).For("sendMessage"))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := sendText(ctx, b, 222, "slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
	waitFor(t, srv, "the call to end", func(s *standin.Server) bool { return s.CallsTo("sendMessage")[0].Done })
	if n := len(srv.Messages(222)); n != 0 {
		t.Errorf("messages = %d, want 0", n)
	}
}

func TestFaultMatching(t *testing.T) {
	tests := []struct {
		name  string
		fault standin.Fault
		sends []int64 // chat of each send, in order
		fails []bool
	}{
		{"2nd send to chat 222", standin.BotBlocked().For("sendMessage").InChat(222).OnCall(2),
			[]int64{222, 333, 222, 222}, []bool{false, false, true, false}},
		{"twice", standin.BotBlocked().Times(2),
			[]int64{1, 1, 1}, []bool{true, true, false}},
		{"always from the 2nd", standin.BotBlocked().OnCall(2).Always(),
			[]int64{1, 1, 1}, []bool{false, true, true}},
		{"other method", standin.BotBlocked().For("editMessageText"),
			[]int64{1, 1}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, standin.Options{})
			b, _ := newBot(t, srv, 3*time.Second)
			srv.Inject(tt.fault)
			for i, chat := range tt.sends {
				_, err := sendText(context.Background(), b, chat, "x")
				if got := errors.Is(err, bot.ErrorForbidden); got != tt.fails[i] {
					t.Errorf("send %d to %d: failed = %v, want %v (%v)", i+1, chat, got, tt.fails[i], err)
				}
			}
		})
	}
}

func TestRemovedFaultStopsFiring(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	in := srv.Inject(standin.BotBlocked().Always())
	if _, err := sendText(context.Background(), b, 1, "x"); err == nil {
		t.Fatal("send with the fault: nil error")
	}
	in.Remove()
	if _, err := sendText(context.Background(), b, 1, "x"); err != nil {
		t.Errorf("send after Remove: %v", err)
	}
}

func TestPollingRecoversFromGatewayErrors(t *testing.T) {
	srv := newServer(t, standin.Options{})
	srv.Inject(standin.BadGatewayHTML().For("getUpdates").Times(2))
	sink, updates := updateSink()
	b, errs := newBot(t, srv, 3*time.Second, sink)
	startBot(t, b)

	id := srv.PushMessage(5, 5, "after the outage")
	if u := receive(t, updates); u.ID != id {
		t.Errorf("update = %d, want %d", u.ID, id)
	}
	if err := receive(t, errs); !strings.Contains(err.Error(), "error decode response body") {
		t.Errorf("polling error = %v, want the decode error", err)
	}
}
