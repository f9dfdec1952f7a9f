package journal

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
)

// Passkeys (policy step_up: passkey). Each approver's credentials live here,
// enrolled from a one-time link printed on the machine, never through chat.
// A vote given with a passkey carries its receipt (the assertion), which the
// surface checked with the WebAuthn library; the journal checks it again in
// the transaction that records the vote, with the stored public key and the
// audit package's offline check (audit.VerifyReceipt): it must be the
// approver's own credential's signature of this approval of this payload,
// the user verified, and its counter must move on from the one kept, under
// the credential's row lock, so that an assertion approves once on any
// replica. The receipt is chained after the vote as a record of its own.

// Errors of passkeys.
var (
	// ErrNoPasskey refuses an assertion of a credential that is not the
	// approver's, or an enrolment link of nobody.
	ErrNoPasskey = errors.New("no such passkey enrolled")
	// ErrPasskeyRefused refuses a receipt that does not prove this approval:
	// another approval, payload or approver, or a signature that does not
	// verify with the stored key.
	ErrPasskeyRefused = errors.New("passkey assertion refused")
	// ErrPasskeyCounter refuses an assertion whose signature counter did not
	// move on: replayed, or made by a cloned authenticator.
	ErrPasskeyCounter = errors.New("passkey signature counter did not move on: a replayed assertion or a cloned authenticator")
	// ErrLinkUsed refuses an enrolment link used, expired or unknown.
	ErrLinkUsed = errors.New("enrolment link used, expired or unknown")
)

// PasskeyCredential is an approver's enrolled passkey.
type PasskeyCredential struct {
	User      policy.UserID
	ID        []byte // the credential id
	PublicKey []byte // its COSE_Key
	SPKI      []byte // the same key, a DER SubjectPublicKeyInfo
	Algorithm int64  // its COSE algorithm
	RPID      string // the relying party it was made for
	Counter   uint32 // the last signature counter seen
	Backup    bool   // backup eligible (a synced passkey)
	Enrolled  time.Time
	LastUsed  time.Time // zero: never
	Removed   time.Time // zero: in use; else it approves nothing since
}

// Key returns c's public key as an audit export carries it.
func (c PasskeyCredential) Key() audit.PasskeyKey {
	return audit.PasskeyKey{User: int64(c.User), Credential: base64.RawURLEncoding.EncodeToString(c.ID), RPID: c.RPID,
		Algorithm: c.Algorithm, SPKI: base64.StdEncoding.EncodeToString(c.SPKI), Enrolled: ms(c.Enrolled)}
}

const passkeyColumns = `credential_id, user_id, public_key, spki, alg, rp_id, counter, backup, created_at, last_used, removed_at`

func scanPasskey(row interface{ Scan(...any) error }) (PasskeyCredential, error) {
	var c PasskeyCredential
	var id, pub, spki string
	var counter, backup, created, used, removed int64
	if err := row.Scan(&id, &c.User, &pub, &spki, &c.Algorithm, &c.RPID, &counter, &backup, &created, &used, &removed); err != nil {
		return c, err
	}
	var err1, err2, err3 error
	c.ID, err1 = base64.RawURLEncoding.DecodeString(id)
	c.PublicKey, err2 = base64.StdEncoding.DecodeString(pub)
	c.SPKI, err3 = base64.StdEncoding.DecodeString(spki)
	c.Counter, c.Backup, c.Enrolled = uint32(counter), backup != 0, fromMS(created)
	if used != 0 {
		c.LastUsed = fromMS(used)
	}
	if removed != 0 {
		c.Removed = fromMS(removed)
	}
	return c, errors.Join(err1, err2, err3)
}

// Passkeys returns user's passkeys in use, oldest first; every approver's
// when user is 0.
func (j *Journal) Passkeys(ctx context.Context, user policy.UserID) ([]PasskeyCredential, error) {
	return j.passkeys(ctx, user, false)
}

// PasskeysEver returns every passkey ever enrolled, removed ones too, oldest
// first: the keys an audit export carries, so that a receipt given before its
// passkey was removed still verifies offline.
func (j *Journal) PasskeysEver(ctx context.Context) ([]PasskeyCredential, error) {
	return j.passkeys(ctx, 0, true)
}

func (j *Journal) passkeys(ctx context.Context, user policy.UserID, removed bool) ([]PasskeyCredential, error) {
	where, args := []string{}, []any{}
	if user != 0 {
		where, args = append(where, "user_id = ?"), append(args, user)
	}
	if !removed {
		where = append(where, "removed_at = 0")
	}
	q := "SELECT " + passkeyColumns + " FROM passkey_credentials"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := j.db.QueryContext(ctx, q+" ORDER BY user_id, created_at, credential_id", args...)
	if err != nil {
		return nil, fmt.Errorf("journal: passkeys: %w", err)
	}
	defer rows.Close()
	var cs []PasskeyCredential
	for rows.Next() {
		c, err := scanPasskey(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: passkeys: %w", err)
		}
		cs = append(cs, c)
	}
	return cs, rows.Err()
}

// RemovePasskeys retires every passkey of user in use: ErrNotFound when there
// is none. A removed passkey approves nothing from then on; its key stays in
// the journal, so that the receipts it gave, which stay in the audit trail,
// still verify with every later export.
func (j *Journal) RemovePasskeys(ctx context.Context, user policy.UserID) error {
	res, err := j.exec(ctx, durable, "UPDATE passkey_credentials SET removed_at = ? WHERE user_id = ? AND removed_at = 0", ms(j.now()), user)
	if err != nil {
		return fmt.Errorf("journal: remove the passkeys of %d: %w", user, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("journal: passkeys of %d: %w", user, ErrNotFound)
	}
	return nil
}

// linkHash is how a link's token is kept: its SHA-256, so that a copy of the
// journal opens no enrolment.
func linkHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewPasskeyLink keeps a one-time enrolment link of user, by its token's
// hash, until expires.
func (j *Journal) NewPasskeyLink(ctx context.Context, user policy.UserID, token string, expires time.Time) error {
	_, err := j.exec(ctx, durable, "INSERT INTO passkey_links(token_sha256, user_id, created_at, expires_at) VALUES(?, ?, ?, ?)",
		linkHash(token), user, ms(j.now()), ms(expires))
	if err != nil {
		return fmt.Errorf("journal: new passkey link of %d: %w", user, err) // never the token
	}
	return nil
}

// PasskeyLink returns the user of the enrolment link token and the
// registration begun from it (nil before BeginPasskeyLink): ErrLinkUsed when
// it is used, expired or unknown.
func (j *Journal) PasskeyLink(ctx context.Context, token string) (policy.UserID, []byte, error) {
	var user policy.UserID
	var session string
	var expires, used int64
	err := j.db.QueryRowContext(ctx, "SELECT user_id, session, expires_at, used_at FROM passkey_links WHERE token_sha256 = ?", linkHash(token)).
		Scan(&user, &session, &expires, &used)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && (used != 0 || !j.now().Before(fromMS(expires))):
		return 0, nil, fmt.Errorf("journal: passkey link: %w", ErrLinkUsed)
	case err != nil:
		return 0, nil, fmt.Errorf("journal: passkey link: %w", err)
	}
	if session == "" {
		return user, nil, nil
	}
	return user, []byte(session), nil
}

// BeginPasskeyLink keeps the registration begun from the link token (its
// challenge), for FinishPasskeyLink: a later begin replaces it.
func (j *Journal) BeginPasskeyLink(ctx context.Context, token string, session []byte) error {
	res, err := j.exec(ctx, durable, "UPDATE passkey_links SET session = ? WHERE token_sha256 = ? AND used_at = 0 AND expires_at > ?",
		string(session), linkHash(token), ms(j.now()))
	if err != nil {
		return fmt.Errorf("journal: passkey link: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("journal: passkey link: %w", ErrLinkUsed)
	}
	return nil
}

// FinishPasskeyLink enrols c from the link token, in one transaction that
// spends the link: a link enrols once. ErrLinkUsed when it is used, expired
// or unknown, or is not c's user's.
func (j *Journal) FinishPasskeyLink(ctx context.Context, token string, c PasskeyCredential) error {
	err := j.tx(ctx, func(tx txn) error {
		now := j.now()
		res, err := tx.ExecContext(ctx, "UPDATE passkey_links SET used_at = ? WHERE token_sha256 = ? AND user_id = ? AND used_at = 0 AND expires_at > ?",
			ms(now), linkHash(token), c.User, ms(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrLinkUsed
		}
		return j.enrolPasskey(ctx, tx, c, now)
	})
	if err != nil {
		return fmt.Errorf("journal: enrol a passkey of %d: %w", c.User, err)
	}
	return nil
}

func (j *Journal) enrolPasskey(ctx context.Context, tx txn, c PasskeyCredential, now time.Time) error {
	backup := 0
	if c.Backup {
		backup = 1
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO passkey_credentials("+passkeyColumns+") VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)",
		base64.RawURLEncoding.EncodeToString(c.ID), c.User, base64.StdEncoding.EncodeToString(c.PublicKey), base64.StdEncoding.EncodeToString(c.SPKI),
		c.Algorithm, c.RPID, int64(c.Counter), backup, ms(now))
	return err
}

// usePasskey checks receipt r as approver by's approval of a, in tx, under
// its credential's row lock (a write lock on SQLite): the credential is by's;
// r claims a's id and payload hash and by; it verifies offline with the
// stored key (audit.VerifyReceipt); and its counter moved on from the one
// kept (two zeros pass: authenticators that keep no counter), which it keeps.
func (j *Journal) usePasskey(ctx context.Context, tx txn, a Approval, by policy.UserID, r audit.PasskeyReceipt, now time.Time) error {
	c, err := scanPasskey(tx.QueryRowContext(ctx, "SELECT "+passkeyColumns+" FROM passkey_credentials WHERE credential_id = ?"+tx.RowLock(" FOR UPDATE"), r.Credential))
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && c.User != by:
		return fmt.Errorf("credential %.12s of user %d: %w", r.Credential, by, ErrNoPasskey)
	case err == nil && !c.Removed.IsZero():
		return fmt.Errorf("credential %.12s of user %d, removed %s: %w", r.Credential, by, c.Removed.UTC().Format(time.RFC3339), ErrNoPasskey)
	case err != nil:
		return fmt.Errorf("passkey of %d: %w", by, err)
	case r.Approval != a.ID || r.PayloadSHA256 != a.PayloadSHA256 || r.By != int64(by):
		return fmt.Errorf("%w: the receipt is of approval %s of payload %.12s by %d, not of %s of payload %.12s by %d",
			ErrPasskeyRefused, r.Approval, r.PayloadSHA256, r.By, a.ID, a.PayloadSHA256, by)
	}
	if err := audit.VerifyReceipt(r, c.Key()); err != nil {
		return fmt.Errorf("%w: %v", ErrPasskeyRefused, err)
	}
	counter, err := r.Counter()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPasskeyRefused, err)
	}
	if (counter != 0 || c.Counter != 0) && counter <= c.Counter {
		return fmt.Errorf("credential %.12s of %d: counter %d after %d: %w", r.Credential, by, counter, c.Counter, ErrPasskeyCounter)
	}
	_, err = tx.ExecContext(ctx, "UPDATE passkey_credentials SET counter = ?, last_used = ? WHERE credential_id = ?", int64(counter), ms(now), r.Credential)
	if err != nil {
		return fmt.Errorf("passkey of %d: keep its counter: %w", by, err)
	}
	return nil
}

// keepReceipt stores r with by's vote on a and chains it after the vote's
// record.
func (j *Journal) keepReceipt(ctx context.Context, tx txn, a Approval, by policy.UserID, r audit.PasskeyReceipt, now time.Time) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE approval_votes SET receipt = ? WHERE approval_id = ? AND voter = ?", string(body), a.ID, by); err != nil {
		return fmt.Errorf("receipt of %d on %s: %w", by, a.ID, err)
	}
	tx.audit(audit.Receipt, a.OperationID, a.ID, now, r)
	return nil
}
