package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
)

// totpIssuer is the name authenticator apps list a factor under.
const totpIssuer = "Countersign"

// runApprover is "countersign approver totp|passkey|list": an approver's second
// factor (policy step_up), enrolled on the machine that holds the journal and
// never through Telegram, so that whoever holds an approver's Telegram
// account cannot enrol a factor of their own.
func runApprover(ctx context.Context, args []string, env Env) int {
	uses := map[string]string{
		"totp": "countersign approver totp [-data DIR | -journal URL] [-replace | -remove] <user_id>",
		"list": "countersign approver list [-data DIR | -journal URL]",
	}
	sub, code := subcommand(env, "countersign approver", uses["totp"]+"\n"+approverPasskeyUse+"\n"+uses["list"], args, "totp", "passkey", "list")
	if code >= 0 {
		return code
	}
	if sub == "passkey" {
		return runApproverPasskey(ctx, args[1:], env)
	}
	var cfg Config
	fs := folderFlags("approver "+sub, env, &cfg, "journal")
	replace, remove := new(bool), new(bool)
	if sub == "totp" {
		fs.BoolVar(replace, "replace", false, "enrol a new key in place of the user's: the old one stops working at once")
		fs.BoolVar(remove, "remove", false, "remove the user's TOTP factor: where step_up asks one, they can no longer approve")
	}
	operands := map[string][]string{"totp": {"<user_id>"}}[sub]
	if code := parseArgs(fs, args[1:], env, uses[sub], operands...); code >= 0 {
		return code
	}
	var user policy.UserID
	if sub == "totp" {
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil || id <= 0 {
			return usageError(env, uses[sub], "%s approver totp: %q is not a Telegram user id (a number: /whoami tells it)", env.program(), fs.Arg(0))
		}
		if *replace && *remove {
			return usageError(env, uses[sub], "%s approver totp: -replace or -remove, not both", env.program())
		}
		user = policy.UserID(id)
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" approver:", err)
		return exitError
	}
	defer j.Close()
	switch {
	case sub == "list":
		err = listFactors(ctx, j, env)
	case *remove:
		err = j.RemoveTOTP(ctx, user)
		if errors.Is(err, journal.ErrNotFound) {
			fmt.Fprintf(env.Stderr, "%s approver totp: user %d has no TOTP factor\n", env.program(), user)
			return exitError
		}
		if err == nil {
			fmt.Fprintf(env.Stdout, "The TOTP factor of user %d is removed: where step_up asks a code, they can no longer approve until they enrol again.\n", user)
		}
	default:
		err = enrolTOTP(ctx, j, user, *replace, env)
		if errors.Is(err, journal.ErrEnrolled) {
			fmt.Fprintf(env.Stderr, "%s approver totp: user %d has a TOTP factor already: -replace enrols a new key (the old one stops working), -remove removes it\n", env.program(), user)
			return exitError
		}
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" approver:", err)
		return exitError
	}
	return exitOK
}

// enrolTOTP makes a fresh secret, keeps it in the journal as user's factor,
// and prints it once, for the approver's authenticator app: as a QR code, as
// the otpauth URI, and as the key to type. Nothing else ever prints it.
func enrolTOTP(ctx context.Context, j *journal.Journal, user policy.UserID, replace bool, env Env) error {
	secret, err := stepup.NewSecret()
	if err != nil {
		return err
	}
	uri := stepup.URI(secret, totpIssuer, strconv.FormatInt(int64(user), 10))
	qr, err := stepup.QR(uri)
	if err != nil {
		return err
	}
	if err := j.EnrolTOTP(ctx, user, secret, replace); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "TOTP second factor enrolled for user %d. Scan this with their authenticator app (Google Authenticator, Aegis, 1Password, …):\n\n%s\n%s\n\n", user, qr, uri)
	fmt.Fprintf(env.Stdout, "Or type the key by hand (time-based, 6 digits, 30 seconds): %s\n\n", secret)
	fmt.Fprintln(env.Stdout, "This is the only time the key is shown: it is kept in the journal, never in a log, a chat or the vault. "+
		"Anyone who reads it can make this person's codes: clear this terminal. Where policies.yaml says step_up: totp, "+
		"they now approve with a tap and then a code from the app.")
	return nil
}

// listFactors prints who has a TOTP factor, when they enrolled, when they
// last used a code, and any lock wrong codes set; never a key.
func listFactors(ctx context.Context, j *journal.Journal, env Env) error {
	fs, err := j.TOTPFactors(ctx)
	if err != nil {
		return err
	}
	keys, err := j.Passkeys(ctx, 0)
	if err != nil {
		return err
	}
	if len(fs) == 0 && len(keys) == 0 {
		fmt.Fprintln(env.Stdout, "No approver has a second factor: `countersign approver totp <user_id>` or `countersign approver passkey -review-url URL <user_id>` enrols one.")
		return nil
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "USER\tFACTOR\tENROLLED\tLAST USED\tSTATE")
	now := time.Now()
	for _, f := range fs {
		last := "never"
		if f.LastStep > 0 {
			last = time.Unix(f.LastStep*int64(stepup.Period/time.Second), 0).UTC().Format("2006-01-02 15:04 UTC")
		}
		state := "ready"
		switch {
		case f.Locked(now):
			state = "locked until " + f.LockedUntil.UTC().Format("2006-01-02 15:04 UTC") + " (wrong codes in a row)"
		case f.Wrong > 0:
			state = fmt.Sprintf("%d wrong code(s) in a row", f.Wrong)
		}
		fmt.Fprintf(w, "%d\ttotp\t%s\t%s\t%s\n", f.User, f.Enrolled.UTC().Format("2006-01-02 15:04 UTC"), last, state)
	}
	for _, k := range keys { // the key's fingerprint, as audit verify lists it
		last := "never"
		if !k.LastUsed.IsZero() {
			last = k.LastUsed.UTC().Format("2006-01-02 15:04 UTC")
		}
		fmt.Fprintf(w, "%d\tpasskey\t%s\t%s\tfor %s, SHA-256 %s\n", k.User, k.Enrolled.UTC().Format("2006-01-02 15:04 UTC"), last, k.RPID, k.Key().Fingerprint())
	}
	return w.Flush()
}
