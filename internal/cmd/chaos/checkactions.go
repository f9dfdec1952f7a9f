package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	oper "github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// The promises of the mix of calls that are not text sends.

// checkActions adds the mix's invariants and figures to r.
func (w *world) checkActions(ctx context.Context, j *journal.Journal, all []journal.Operation, r *Report) {
	ops := commits(all)
	for _, op := range ops {
		r.ByTool[op.Tool+" "+string(op.State)]++
	}
	r.Invariants = append(r.Invariants,
		w.additiveOnce(ops),
		w.keyedOnce(ops),
		w.stateSettled(ctx, j, ops, r),
		w.finalStateMatches(ctx, j, ops),
		w.headerSecretNowhere(ops),
	)
}

// additiveOnce: no photo or album upload of one operation reached its chat more
// than once (the calls Telegram took, per caption, and the fake's record of each
// upload's SHA-256), and the service saw at most one effect per operation of an
// HTTP tool without a key.
func (w *world) additiveOnce(ops []journal.Operation) Invariant {
	in := Invariant{Name: "nothing additive delivered twice (photos, albums, HTTP calls without a key)"}
	out := map[string]int{} // caption or path → operations that went out with it
	for _, op := range wentOut(ops) {
		for _, t := range deliveredTexts(op) {
			out[t]++
		}
		if p := apiPath(op); p != "" && !op.Payload.Request.IdempotencyKey {
			out[p]++
		}
	}
	uploads, n := map[string]int{}, 0
	for _, method := range []string{"sendPhoto", "sendMediaGroup"} {
		for _, c := range w.srv.CallsTo(method) {
			if !taken(c) || c.ChatID < firstChat {
				continue
			}
			for _, caption := range callCaptions(c) {
				uploads[caption]++
				n++
			}
			for _, u := range c.Uploads {
				if u.SHA256 == "" {
					in.Broken = append(in.Broken, fmt.Sprintf("an upload to chat %d has no SHA-256 recorded", c.ChatID))
				}
			}
		}
	}
	for caption, k := range uploads {
		if k > max(1, out[caption]) {
			in.Broken = append(in.Broken, fmt.Sprintf("%q uploaded %d times by %d operations", caption, k, out[caption]))
		}
	}
	effects := map[string]int{}
	for _, e := range w.mix.api.Effects() {
		if !strings.HasPrefix(e.Path, httpPaths[httpKeyed]) {
			effects[e.Path]++
		}
	}
	for path, k := range effects {
		if k > max(1, out[path]) {
			in.Broken = append(in.Broken, fmt.Sprintf("%s: %d effects by %d operations", path, k, out[path]))
		}
	}
	in.Name += fmt.Sprintf(": %d uploads, %d effects without a key", n, len(effects))
	return in
}

// callCaptions are the captions of a sendPhoto or sendMediaGroup call.
func callCaptions(c telegramtest.Call) []string {
	if c.Method == "sendPhoto" {
		return []string{c.Params["caption"]}
	}
	var out []string
	for _, m := range strings.Split(c.Params["media"], `"caption":"`)[1:] {
		caption, _, _ := strings.Cut(m, `"`)
		out = append(out, caption)
	}
	return out
}

// keyedOnce: the service that honours Idempotency-Key saw at most one effect per
// key, and every key is an operation's id.
func (w *world) keyedOnce(ops []journal.Operation) Invariant {
	in := Invariant{Name: "with idempotency: header, at most one effect per Idempotency-Key (the operation id)"}
	ids := map[string]bool{}
	for _, op := range ops {
		ids[op.ID] = true
	}
	byKey := map[string]int{}
	for _, e := range w.mix.api.Effects() {
		if strings.HasPrefix(e.Path, httpPaths[httpKeyed]) {
			byKey[e.Key]++
		}
	}
	for key, k := range byKey {
		switch {
		case !ids[key]:
			in.Broken = append(in.Broken, fmt.Sprintf("an effect under key %q, which is no operation's id", key))
		case k > 1:
			in.Broken = append(in.Broken, fmt.Sprintf("%s: %d effects under one key", key, k))
		}
	}
	keyed := 0
	for _, r := range w.mix.api.Requests() {
		if strings.HasPrefix(r.Path, httpPaths[httpKeyed]) && r.Method != "GET" {
			keyed++
		}
	}
	in.Name += fmt.Sprintf(": %d requests, %d effects", keyed, len(byKey))
	return in
}

// The reasons with which the system settles an unknown outcome itself.
var settledReasons = []string{oper.ReasonSettled, oper.ReasonSettledByReading, oper.ReasonNotInEffect, oper.ReasonLateAnswer}

// stateSettled: every state-setting operation whose outcome was ever unknown was
// settled by the system (repeated, or its state read, with the evidence), or,
// when the repeat or the read could not settle it either, left to a person with
// an envelope. It counts both.
func (w *world) stateSettled(ctx context.Context, j *journal.Journal, ops []journal.Operation, r *Report) Invariant {
	in := Invariant{Name: "every state-setting unknown settled by the system, or left to a person after the repeat failed too"}
	for _, op := range ops {
		if !stateSetting[op.Tool] {
			continue
		}
		ts, err1 := j.Transitions(ctx, op.ID)
		as, err2 := j.Attempts(ctx, op.ID)
		if err1 != nil || err2 != nil {
			in.Broken = append(in.Broken, fmt.Sprintf("%s: the journal: %v %v", op.ID, err1, err2))
			continue
		}
		ever, settled, tried, byPerson := false, "", false, false
		for _, a := range as {
			ever = ever || a.Outcome == "unknown"
		}
		for _, t := range ts {
			switch {
			case slices.Contains(settledReasons, t.Reason):
				settled = t.Reason
			case t.To == journal.Unknown:
				ever = true
				tried = tried || strings.Contains(t.Reason, "did not settle it")
			case t.From == journal.Unknown && t.Reason == oper.ReasonSettleStopped:
				// The system took back what a stop left unknown, to settle it.
			case t.From == journal.Unknown:
				byPerson = true
			}
		}
		if !ever {
			continue
		}
		r.StateUnknowns++
		switch {
		case settled != "" && !byPerson:
			r.StateSettled++
			if settled != oper.ReasonNotInEffect && (op.Evidence == nil && (op.Result == nil || op.Result.Evidence == nil)) {
				in.Broken = append(in.Broken, fmt.Sprintf("%s (%s) settled without evidence", op.ID, op.Tool))
			}
		case tried && (op.Envelope != "" || op.State != journal.Unknown):
			r.StateToPerson++
		default:
			in.Broken = append(in.Broken, fmt.Sprintf("%s (%s) ended %s: its unknown outcome was neither repeated nor read (%s)", op.ID, op.Tool, op.State, lastReason(ts)))
		}
	}
	in.Name += fmt.Sprintf(": %d of %d settled without a human", r.StateSettled, r.StateUnknowns)
	return in
}

func lastReason(ts []journal.Transition) string {
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].To == journal.Unknown {
			return ts[i].Reason
		}
	}
	return "no move to unknown"
}

// finalStateMatches: each message an edit, delete, pin or unpin was committed on
// reads, in the fake Telegram, as the last of them committed says (by the start
// of the attempt that made it): the last edit's text, deleted or not, pinned or
// not. A message with an outcome still unknown is not compared.
func (w *world) finalStateMatches(ctx context.Context, j *journal.Journal, ops []journal.Operation) Invariant {
	in := Invariant{Name: "each edited, deleted, pinned message reads as the journal's last committed change"}
	type change struct {
		op journal.Operation
		at time.Time
	}
	byMsg := map[[2]int64][]change{}
	unknown := map[[2]int64]bool{}
	for _, op := range ops {
		if op.Payload.MessageID == 0 || !stateSetting[op.Tool] {
			continue
		}
		var chat int64
		fmt.Sscan(op.Payload.Target, &chat)
		k := [2]int64{chat, op.Payload.MessageID}
		if op.State == journal.Unknown {
			unknown[k] = true
		}
		if op.State != journal.Committed {
			continue
		}
		at := op.Updated
		if as, err := j.Attempts(ctx, op.ID); err == nil && len(as) > 0 {
			at = as[len(as)-1].Started
		}
		byMsg[k] = append(byMsg[k], change{op, at})
	}
	compared := 0
	for k, cs := range byMsg {
		if unknown[k] {
			continue
		}
		m, ok := w.srv.Message(k[0], int(k[1]))
		if !ok {
			in.Broken = append(in.Broken, fmt.Sprintf("message %d in chat %d is not in Telegram", k[1], k[0]))
			continue
		}
		compared++
		slices.SortFunc(cs, func(a, b change) int { return a.at.Compare(b.at) })
		deleted, text, pinned := false, w.sentText(m), 0 // pinned: 0 unknown, 1 pinned, -1 not
		for _, c := range cs {
			switch c.op.Payload.Action {
			case action.DeleteMessage:
				deleted = true
			case action.EditMessage:
				text = c.op.Payload.Text
			case action.PinMessage:
				pinned = 1
			case action.UnpinMessage:
				pinned = -1
			}
		}
		isPinned := slices.Contains(w.srv.Pinned(k[0]), int(k[1]))
		switch {
		case deleted != m.Deleted:
			in.Broken = append(in.Broken, fmt.Sprintf("message %d in chat %d: deleted %v, the journal says %v", k[1], k[0], m.Deleted, deleted))
		case !deleted && m.RawText != text:
			in.Broken = append(in.Broken, fmt.Sprintf("message %d in chat %d reads %q, the journal's last edit %q", k[1], k[0], m.RawText, text))
		case !deleted && pinned != 0 && isPinned != (pinned == 1):
			in.Broken = append(in.Broken, fmt.Sprintf("message %d in chat %d: pinned %v, the journal's last change says %v", k[1], k[0], isPinned, pinned == 1))
		}
	}
	in.Name += fmt.Sprintf(": %d messages compared", compared)
	return in
}

// headerSecretNowhere: the HTTP tools' header secret reached the service, and
// nothing else: no file of the data folder (journal, vault, file store), no log
// line, no card or message text, no parameter of a call to the fake Telegram.
func (w *world) headerSecretNowhere(ops []journal.Operation) Invariant {
	in := Invariant{Name: "the HTTP header secret in no file, log line, card or Bot API call"}
	s := w.mix.token
	filepath.WalkDir(w.dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), s) {
				in.Broken = append(in.Broken, path+" holds the header secret")
			}
		}
		return nil
	})
	for _, r := range w.reps {
		if b, err := os.ReadFile(r.log.Name()); err == nil && strings.Contains(string(b), s) {
			in.Broken = append(in.Broken, r.log.Name()+" holds the header secret")
		}
	}
	if w.agents != nil {
		for _, c := range w.agents.callers {
			if c.log == nil {
				continue
			}
			if b, err := os.ReadFile(c.log.Name()); err == nil && strings.Contains(string(b), s) {
				in.Broken = append(in.Broken, c.log.Name()+" holds the header secret")
			}
		}
	}
	for _, m := range w.srv.AllMessages() {
		if strings.Contains(m.Text+m.Caption+m.RawText+string(m.ReplyMarkup), s) {
			in.Broken = append(in.Broken, fmt.Sprintf("message %d in chat %d holds the header secret", m.MessageID, m.Chat.ID))
		}
	}
	for _, c := range w.srv.Calls() {
		for k, v := range c.Params {
			if strings.Contains(v, s) {
				in.Broken = append(in.Broken, fmt.Sprintf("%s call %d: parameter %s holds the header secret", c.Method, c.Seq, k))
			}
		}
	}
	// The secret looked for is the one sent: the service saw it on every call.
	sent, with := 0, 0
	for _, r := range w.mix.api.Requests() {
		sent++
		if r.Header.Get("Authorization") == "Bearer "+s {
			with++
		}
	}
	if with != sent {
		in.Broken = append(in.Broken, fmt.Sprintf("%d of %d requests to the service came without the header secret", sent-with, sent))
	}
	in.Name += fmt.Sprintf(" (it reached the service on %d requests)", with)
	return in
}
