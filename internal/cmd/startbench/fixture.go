package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/vault"
)

// fixture is the shape of the journal a start is measured against.
type fixture struct {
	ops, pending int
	unknown      int   // of the older ones, outcomes unknown, each with its envelope
	operator     int64 // the requester of every task
	approvers    []int64
	ttl          time.Duration
}

// build writes the journal of f in dir/journal.db. The schema is the journal's own
// (journal.Open creates it and runs its migrations); the rows are then written in
// one transaction with the columns the journal writes, as a journal that lived
// through f.ops sends would hold them: a task per operation, six transitions and an
// attempt per committed send, an approval and a card per approver for every
// operation that asked, an envelope in the vault for each unknown outcome (written
// by the vault itself), the last six days of updates in the inbox, handled. Going
// through the journal's API would cost several fsyncs per operation; this is the
// bulk path, and journal.Open reads the result back before it is used.
func build(ctx context.Context, dir string, f fixture, pol *policy.Policy) error {
	file := filepath.Join(dir, "journal.db")
	j, err := journal.Open(ctx, file)
	if err != nil {
		return err
	}
	j.Close()
	db, err := sql.Open("sqlite3", "file:"+file+"?_journal_mode=WAL&_synchronous=OFF&_foreign_keys=on&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	snap, err := json.Marshal(pol)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	w, err := newWriter(ctx, tx)
	if err != nil {
		return err
	}
	defer w.close()
	if w.vault, err = vault.Open(filepath.Join(dir, "vault")); err != nil {
		return err
	}
	now := time.Now()
	span := 30 * 24 * time.Hour // the sends are spread over the last 30 days
	for i := range f.ops {
		k := committed
		switch {
		case i >= f.ops-f.pending: // the newest ones wait for a tap
			k = pending
		case f.unknown > 0 && i%max(1, (f.ops-f.pending)/f.unknown) == 0 && w.unknowns < f.unknown:
			k, w.unknowns = unknown, w.unknowns+1
		}
		at := now.Add(-span + time.Duration(i)*span/time.Duration(f.ops))
		if k == pending { // asked within the approval's lifetime, so none has expired
			at = now.Add(-f.ttl / 2).Add(time.Duration(i-(f.ops-f.pending)) * (f.ttl / 4) / time.Duration(f.pending))
		}
		if err := w.send(i, at, k, f, snap, now); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
	}
	return tx.Commit()
}

// writer holds the prepared inserts of one bulk transaction.
type writer struct {
	ctx                                             context.Context
	task, op, trans, attempt, approval, card, inbox *sql.Stmt
	update                                          int64
	vault                                           *vault.Vault
	unknowns                                        int
}

// kind is how a send of the fixture ended.
type kind int

const (
	committed kind = iota
	pending        // awaiting approval, its cards out
	unknown        // sent, no answer: an envelope waits for a person
)

func newWriter(ctx context.Context, tx *sql.Tx) (*writer, error) {
	w := &writer{ctx: ctx}
	for _, s := range []struct {
		to  **sql.Stmt
		sql string
	}{
		{&w.task, `INSERT INTO tasks(id, requester, chat, summary, origin, surface, policy, created_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.op, `INSERT INTO operations(id, task_id, tool, fingerprint, surface, transport, payload, payload_sha256, verdict, state, attempts, evidence, result, envelope, created_at, updated_at)
			VALUES(?, ?, ?, ?, 'telegram', 'telegram', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.trans, `INSERT INTO transitions(operation_id, from_state, to_state, reason, at) VALUES(?, ?, ?, ?, ?)`},
		{&w.attempt, `INSERT INTO attempts(operation_id, n, started_at, finished_at, outcome) VALUES(?, 1, ?, ?, ?)`},
		{&w.approval, `INSERT INTO approvals(id, operation_id, payload_sha256, requester, created_at, expires_at, decision, decided_by, decided_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.card, `INSERT INTO cards(ref, chat_id, message_id, text, created_at) VALUES(?, ?, ?, ?, ?)`},
		{&w.inbox, `INSERT INTO inbox(key, update_id, body, received_at, handled_at) VALUES(?, ?, ?, ?, ?)`},
	} {
		st, err := tx.PrepareContext(ctx, s.sql)
		if err != nil {
			return nil, err
		}
		*s.to = st
	}
	return w, nil
}

func (w *writer) close() {
	for _, s := range []*sql.Stmt{w.task, w.op, w.trans, w.attempt, w.approval, w.card, w.inbox} {
		if s != nil {
			s.Close()
		}
	}
}

func (w *writer) exec(s *sql.Stmt, args ...any) error {
	_, err := s.ExecContext(w.ctx, args...)
	return err
}

// send writes the rows of send i, made at at and ended as k.
func (w *writer) send(i int, at time.Time, k kind, f fixture, snap []byte, now time.Time) error {
	id, task, apID := fmt.Sprintf("op-b%07d", i), fmt.Sprintf("task-b%07d", i), fmt.Sprintf("ap-b%07d", i)
	target := fmt.Sprint(1000 + i%50)
	p := action.Payload{Action: "send_message", Target: target, Text: fmt.Sprintf("Daily digest %d: the numbers are in, and the release went out on time.", i)}
	payload, _ := json.Marshal(p)
	sum := sha256.Sum256(payload)
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	key := fmt.Sprintf("message:%d:%d", f.operator, i+1)
	if err := w.exec(w.task, task, f.operator, fmt.Sprint(f.operator), "/send", "telegram:"+key, "telegram", snap, ms(at)); err != nil {
		return err
	}
	type step struct {
		from, to journal.State
		reason   string
	}
	path := []step{{"", journal.Prepared, "prepared"}, {journal.Prepared, journal.Verified, "verifier: pass (5 checks)"},
		{journal.Verified, journal.AwaitingApproval, "approval requested"}}
	state, attempts, evidence, result, note := journal.AwaitingApproval, 0, "", "", ""
	switch k {
	case committed:
		ev := &action.Evidence{ChatID: target, MessageIDs: []int64{int64(i + 1)}}
		r := action.Result{Status: action.StatusSucceeded, OperationID: id, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone, Evidence: ev}
		state, attempts, evidence, result = journal.Committed, 1, mustJSON(ev), mustJSON(r)
		path = append(path, step{journal.AwaitingApproval, journal.Approved, fmt.Sprintf("approved by %d", f.approvers[0])},
			step{journal.Approved, journal.Committing, "attempt 1"}, step{journal.Committing, journal.Committed, "delivered"})
	case unknown:
		why := "timeout after the request was sent"
		r := action.Result{Status: action.StatusTerminal, OperationID: id, SideEffect: action.SideEffectUnknown, NextAction: action.NextVerify, Reason: why}
		state, attempts, result = journal.Unknown, 1, mustJSON(r)
		path = append(path, step{journal.AwaitingApproval, journal.Approved, fmt.Sprintf("approved by %d", f.approvers[0])},
			step{journal.Approved, journal.Committing, "attempt 1"}, step{journal.Committing, journal.Unknown, why})
		var err error
		note, err = w.vault.Write(envelope.Envelope{OperationID: id, Action: p.Action, Tool: "commit_send_message",
			Status: envelope.StatusUnknown, LastConfirmed: string(journal.Approved), NextAction: envelope.NextVerify,
			Target: target, PayloadSHA256: p.SHA256(), Created: at.UTC(), Expires: at.UTC().Add(7 * 24 * time.Hour), Attempts: 1,
			Response: why, Excerpt: vault.Excerpt(p.Text)})
		if err != nil {
			return err
		}
	}
	if err := w.exec(w.op, id, task, "commit_send_message", hex.EncodeToString(sum[:]), payload, p.SHA256(), "pass (5 checks)",
		state, attempts, evidence, result, note, ms(at), ms(at.Add(2*time.Second))); err != nil {
		return err
	}
	for n, t := range path {
		if err := w.exec(w.trans, id, t.from, t.to, t.reason, ms(at.Add(time.Duration(n)*time.Second/3))); err != nil {
			return err
		}
	}
	decision, by, decided := journal.Pending, int64(0), int64(0)
	if k != pending {
		outcome := map[kind]string{committed: "committed", unknown: "unknown"}[k]
		decision, by, decided = journal.DecideApprove, f.approvers[0], ms(at.Add(time.Second))
		if err := w.exec(w.attempt, id, ms(at.Add(time.Second)), ms(at.Add(2*time.Second)), outcome); err != nil {
			return err
		}
	}
	if err := w.exec(w.approval, apID, id, p.SHA256(), f.operator, ms(at), ms(at.Add(f.ttl)), decision, by, decided); err != nil {
		return err
	}
	for n, chat := range f.approvers {
		text := "Approval needed: send_message to " + target + "\n" + p.Text
		if err := w.exec(w.card, apID, chat, 2*i+n+1, text, ms(at)); err != nil {
			return err
		}
	}
	if now.Sub(at) > 6*24*time.Hour {
		return nil // older updates were pruned from the inbox
	}
	w.update++
	body := fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"chat":{"id":%d,"type":"private"},"from":{"id":%d},"text":"/send %s %s"}}`,
		w.update, i+1, f.operator, f.operator, target, p.Text)
	return w.exec(w.inbox, key, w.update, body, ms(at), ms(at.Add(2*time.Second)))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
