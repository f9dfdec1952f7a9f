package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/stepup"
)

// passkeyLinkFor is how long an enrolment link works: long enough to scan
// its QR code from the machine's screen and make the passkey, short enough
// that a link left on a screen or in a scrollback is dead by the time
// anyone else reads it.
const passkeyLinkFor = 30 * time.Minute

const approverPasskeyUse = "countersign approver passkey [-data DIR | -journal URL] -review-url URL [-remove] <user_id>"

// runApproverPasskey is "countersign approver passkey USER": a one-time link
// (and its QR code) to the review page's enrolment, printed on the machine
// that holds the journal, never sent through Telegram, so that whoever holds
// an approver's Telegram account cannot enrol a passkey of their own. With
// -remove it forgets the user's passkeys.
func runApproverPasskey(ctx context.Context, args []string, env Env) int {
	var cfg Config
	fs := folderFlags("approver passkey", env, &cfg, "journal")
	reviewURL := fs.String("review-url", "", "the public https address of the review page, as countersign run's -review-url")
	remove := fs.Bool("remove", false, "retire the user's passkeys: where step_up asks one, they can no longer approve (their receipts stay in the audit trail, and exports keep their keys)")
	if code := parseArgs(fs, args, env, approverPasskeyUse, "<user_id>"); code >= 0 {
		return code
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil || id <= 0 {
		return usageError(env, approverPasskeyUse, "%s approver passkey: %q is not a Telegram user id (a number: /whoami tells it)", env.program(), fs.Arg(0))
	}
	user := policy.UserID(id)
	if !*remove {
		if *reviewURL == "" {
			return usageError(env, approverPasskeyUse, "%s approver passkey: -review-url is where the enrolment page is served (countersign run's -review-url)", env.program())
		}
		if _, err := passkey.NewRP(*reviewURL); err != nil {
			fmt.Fprintf(env.Stderr, "%s approver passkey: -review-url: %v\n", env.program(), err)
			return exitUsage
		}
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" approver passkey:", err)
		return exitError
	}
	defer j.Close()
	if *remove {
		if err := j.RemovePasskeys(ctx, user); errors.Is(err, journal.ErrNotFound) {
			fmt.Fprintf(env.Stderr, "%s approver passkey: user %d has no passkey\n", env.program(), user)
			return exitError
		} else if err != nil {
			fmt.Fprintln(env.Stderr, env.program()+" approver passkey:", err)
			return exitError
		}
		fmt.Fprintf(env.Stdout, "The passkeys of user %d are removed: where step_up asks a passkey, they can no longer approve until they enrol again. The receipts they gave still verify: every audit export keeps their keys.\n", user)
		return exitOK
	}
	if err := printPasskeyLink(ctx, j, user, *reviewURL, env); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" approver passkey:", err)
		return exitError
	}
	return exitOK
}

// printPasskeyLink makes a one-time enrolment link of user and prints it
// with its QR code.
func printPasskeyLink(ctx context.Context, j *journal.Journal, user policy.UserID, reviewURL string, env Env) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	until := time.Now().Add(passkeyLinkFor)
	if err := j.NewPasskeyLink(ctx, user, token, until); err != nil {
		return err
	}
	link := review.EnrolURL(reviewURL, token)
	qr, err := stepup.QR(link)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "A one-time link to enrol a passkey of user %d, working until %s (once):\n\n%s\n%s\n",
		user, until.UTC().Format("15:04 UTC"), qr, link)
	fmt.Fprintln(env.Stdout, "\nScan it with the phone the approver approves from, and open it in the phone's own browser"+
		" (not inside Telegram). Give it in person, never through Telegram: whoever opens it first enrols their passkey as this approver's.")
	return nil
}
