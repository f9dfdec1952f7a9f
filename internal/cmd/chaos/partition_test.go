package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/partition"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// The database's checks catch what they name: a send and an update taken by a
// replica past the grace of its cut, and not those of another replica, nor
// those after its heal.
func TestDatabaseInvariantsCatchBrokenPromises(t *testing.T) {
	srv := telegramtest.New(telegramtest.Options{Token: token})
	defer srv.Close()
	send := func(client string, chat string) {
		resp, err := http.PostForm(srv.ClientURL(client)+"/bot"+token+"/sendMessage", url.Values{"chat_id": {chat}, "text": {"x " + client}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	w := &world{srv: srv, lb: newBalancer(1), db: newDBFaults(Config{Seed: 1, Duration: time.Second}, nil)}
	cut := &cutRecord{rep: "r1", mode: partition.Hang, at: time.Now().Add(-partitionGrace - time.Second)}
	w.db.cuts = append(w.db.cuts, cut)
	send("r1", "2002") // past the grace: broken
	send("r2", "2003") // another replica
	send("r1", "100")  // a card to the operator, no commit
	if resp, err := http.PostForm(srv.ClientURL("r1")+"/bot"+token+"/getChat", url.Values{"chat_id": {"2005"}}); err == nil {
		resp.Body.Close() // a read, no commit
	}
	r1, r2 := &replica{name: "r1"}, &replica{name: "r2"}
	w.logDelivery(r1, 7, time.Now(), true)  // taken while cut off: broken
	w.logDelivery(r1, 8, time.Now(), false) // refused
	w.logDelivery(r2, 9, time.Now(), true)
	cut.healed = time.Now()
	send("r1", "2004") // after the heal
	if in := w.nothingSentCutOff(); len(in.Broken) != 1 || !strings.Contains(in.Broken[0], "by r1") {
		t.Errorf("sends during a cut: %q", in.Broken)
	}
	if in := w.nothingTakenCutOff(); len(in.Broken) != 1 || !strings.Contains(in.Broken[0], "update 7 taken by r1") {
		t.Errorf("updates taken during a cut: %q", in.Broken)
	}
}
