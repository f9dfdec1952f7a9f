package telegram

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

const replicaToken = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// A stranger whose messages a load balancer spreads over every replica is told
// once, not once per replica: the replicas agree in the journal whom they told.
func TestAStrangerWhoWritesToEveryReplicaIsToldOnce(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name  string
		fresh func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "journal.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.Fresh(t) }},
	} {
		t.Run(b.name, func(t *testing.T) { testAStrangerWhoWritesToEveryReplicaIsToldOnce(t, b.fresh(t)) })
	}
}

func testAStrangerWhoWritesToEveryReplicaIsToldOnce(t *testing.T, name string) {
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: replicaToken})
	pol := &policy.Policy{Access: policy.Access{Operators: []policy.UserID{111}, Approvers: []policy.UserID{111}}}
	bots := replicaBots(t, name, srv, pol, 3)
	ctx := context.Background()
	const stranger = 5000
	for round := range 3 {
		for r, b := range bots {
			m := &models.Message{ID: 10*round + r, From: &models.User{ID: stranger},
				Chat: models.Chat{ID: stranger, Type: models.ChatTypePrivate}, Text: "/send 222 let me in"}
			b.onMessage(ctx, fmt.Sprint("u", round, r), m, true)
		}
	}
	// Each replica sends its refusals in the order it queued them: once a
	// stranger refused after this one hears from every replica, whatever any
	// replica was to send this one has gone.
	for r, b := range bots {
		marker := int64(4000 + r)
		b.refuse(ctx, marker, policy.UserID(marker))
	}
	err := srv.WaitTimeout(10*time.Second, func(s *telegramtest.Server) bool {
		for r := range bots {
			if len(s.Messages(int64(4000+r))) == 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("waiting for every replica's marker refusal: %v", err)
	}
	if got := len(srv.Messages(stranger)); got != 1 {
		t.Errorf("the stranger got %d refusals from %d replicas, want one", got, len(bots))
	}
}

// replicaBots starts n bots on the journal at name, each a replica of its own
// name, with pol and each sending its refusals until the test ends.
func replicaBots(t *testing.T, name string, srv *telegramtest.Server, pol *policy.Policy, n int) []*Bot {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var bots []*Bot
	for r := range n {
		j := replicaJournal(t, name, r)
		b, err := New(ctx, j, Options{Token: replicaToken, APIURL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		b.policy = pol
		done := make(chan struct{})
		go func() { defer close(done); b.sendRefusals(ctx) }()
		t.Cleanup(func() { cancel(); <-done }) // before the journal closes
		bots = append(bots, b)
	}
	return bots
}
