package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/journal"
)

// runAudit is "countersign audit verify|export|keygen": the journal's audit trail
// checked in place, exported signed, an export checked offline, and a key made.
func runAudit(ctx context.Context, args []string, env Env) int {
	uses := map[string]string{
		"verify": "countersign audit verify [-data DIR | -journal URL] [-against EXPORT [-pub KEY]]\ncountersign audit verify -pub KEY FILE",
		"export": "countersign audit export [-data DIR | -journal URL] [-since SEQ] [-o FILE]   (signs with $" + audit.KeyEnv + ")",
		"keygen": "countersign audit keygen",
	}
	sub, code := subcommand(env, "countersign audit", uses["verify"]+"\n"+uses["export"]+"\n"+uses["keygen"], args, "verify", "export", "keygen")
	if code >= 0 {
		return code
	}
	var cfg Config
	fs := folderFlags("audit "+sub, env, &cfg, "journal")
	if sub == "keygen" { // it reads no folder
		fs = flag.NewFlagSet("countersign audit keygen", flag.ContinueOnError)
		fs.SetOutput(env.Stderr)
	}
	var pub, out, against *string
	var since *int64
	var operands []string
	switch sub {
	case "verify":
		pub = fs.String("pub", "", "check the export FILE offline against this public key (base64, or a file holding it)")
		against = fs.String("against", "", "compare the journal's trail with this export kept elsewhere (catches a journal rewritten whole); with -pub, check its signature first")
		operands = []string{"[FILE]"}
	case "export":
		since = fs.Int64("since", 1, "the first record to export, by seq")
		out = fs.String("o", "", "write the export to FILE (created 0600) instead of stdout")
	}
	if code := parseArgs(fs, args[1:], env, uses[sub], operands...); code >= 0 {
		return code
	}
	switch {
	case sub == "keygen":
		return keygen(env)
	case sub == "verify" && *against != "" && fs.NArg() > 0:
		return usageError(env, uses[sub], env.program()+" audit verify: -against EXPORT takes no FILE (the export is EXPORT)")
	case sub == "verify" && *against == "" && (*pub != "") != (fs.NArg() == 1):
		return usageError(env, uses[sub], env.program()+" audit verify: -pub KEY and FILE go together (an export checked offline)")
	case sub == "verify" && *pub != "" && *against == "":
		return checkExport(*pub, fs.Arg(0), env)
	}
	if _, err := os.Stat(cfg.journalName()); err != nil && !journal.IsPostgres(cfg.journalName()) {
		fmt.Fprintf(env.Stderr, env.program()+" audit: no journal in %s (set -data)\n", cfg.DataDir)
		return exitError
	}
	var key ed25519.PrivateKey
	if sub == "export" {
		k, err := audit.ParseKey(env.Getenv(audit.KeyEnv)) // before anything is opened or written
		if err != nil {
			fmt.Fprintln(env.Stderr, env.program()+" audit export:", err)
			return exitError
		}
		key = k
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit:", err)
		return exitError
	}
	defer j.Close()
	if sub == "export" {
		return exportAudit(ctx, j, key, *since, *out, env)
	}
	if *against != "" {
		return verifyAgainst(ctx, j, *against, *pub, env)
	}
	return verifyJournal(ctx, j, env)
}

// verifyAgainst is "countersign audit verify -against EXPORT [-pub KEY]": the
// journal checked in place, then compared with an export kept elsewhere,
// whose signature is checked first when -pub gives the key.
func verifyAgainst(ctx context.Context, j *journal.Journal, export, pubArg string, env Env) int {
	if pubArg != "" {
		if code := checkExport(pubArg, export, env); code != exitOK {
			return code
		}
	}
	if code := verifyJournal(ctx, j, env); code != exitOK {
		return code
	}
	f, err := os.Open(export)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit verify:", err)
		return exitError
	}
	defer f.Close()
	rep, err := audit.Against(ctx, f, j.AuditRecords)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit verify:", err)
		return exitError
	}
	if rep.Fault != nil {
		fmt.Fprintf(env.Stdout, "bad: against %s: %s\n", export, rep.Fault)
		return exitError
	}
	fmt.Fprintf(env.Stdout, "ok: the journal's chain extends %s (%d records, head %.16s)\n", export, rep.Records, rep.Head)
	return exitOK
}

// verifyJournal is "countersign audit verify" of a journal.
func verifyJournal(ctx context.Context, j *journal.Journal, env Env) int {
	rep, err := j.VerifyAudit(ctx)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit verify:", err)
		return exitError
	}
	if rep.Fault != nil {
		fmt.Fprintf(env.Stdout, "bad: %s\n", rep.Fault)
		return exitError
	}
	fmt.Fprintf(env.Stdout, "ok: %d records, head %.16s", rep.Records, rep.Head)
	if rep.Pending > 0 { // PostgreSQL: facts committed while it ran, their records not yet chained
		fmt.Fprintf(env.Stdout, "; %d more pending, checked against their facts", rep.Pending)
	}
	fmt.Fprintln(env.Stdout)
	return exitOK
}

// checkExport is "countersign audit verify -pub KEY FILE".
func checkExport(pubArg, file string, env Env) int {
	pub, err := audit.ParsePublicKey(pubArg)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit verify: -pub:", err)
		return exitError
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit verify:", err)
		return exitError
	}
	defer f.Close()
	rep, err := audit.Check(f, pub)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit verify:", err)
		return exitError
	}
	if rep.Fault != nil {
		fmt.Fprintf(env.Stdout, "bad: %s: %s\n", file, rep.Fault)
		return exitError
	}
	fmt.Fprintf(env.Stdout, "ok: %d records, head %.16s, signed by the key", rep.Records, rep.Head)
	if rep.Receipts > 0 || len(rep.Keys) > 0 {
		fmt.Fprintf(env.Stdout, "; %d passkey receipts verified with the export's %d public keys alone", rep.Receipts, len(rep.Keys))
	}
	fmt.Fprintln(env.Stdout)
	for _, k := range rep.Keys { // for a person to compare with the fingerprints printed at enrolment
		fmt.Fprintf(env.Stdout, "  passkey of %d for %s, credential %s, SHA-256 %s\n", k.User, k.RPID, k.Credential, k.Fingerprint())
	}
	return exitOK
}

// exportAudit is "countersign audit export": the records from since on, then the
// signature line. A file is written to a temporary name and renamed when
// complete, so a failed export never leaves a file that looks like one.
func exportAudit(ctx context.Context, j *journal.Journal, key ed25519.PrivateKey, since int64, out string, env Env) int {
	w, done := env.Stdout, func(error) error { return nil }
	if out != "" {
		f, err := os.CreateTemp(filepath.Dir(out), ".audit-export-*")
		if err != nil {
			fmt.Fprintln(env.Stderr, env.program()+" audit export:", err)
			return exitError
		}
		w = f
		done = func(err error) error {
			if err == nil {
				err = errors.Join(f.Sync(), f.Chmod(0o600))
			}
			err = errors.Join(err, f.Close())
			if err == nil {
				return os.Rename(f.Name(), out)
			}
			os.Remove(f.Name())
			return err
		}
	}
	sig, err := j.ExportAudit(ctx, w, key, since)
	if err = done(err); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit export:", err)
		return exitError
	}
	if out != "" {
		fmt.Fprintf(env.Stderr, "exported %d records to %s, head %.16s\n", sig.Records, out, sig.Head)
	}
	return exitOK
}

// keygen is "countersign audit keygen": a new private key on stdout, for the
// environment ($COUNTERSIGN_AUDIT_KEY), and its public key on stderr, for
// whoever checks exports.
func keygen(env Env) int {
	priv, pub, err := audit.NewKey()
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" audit keygen:", err)
		return exitError
	}
	fmt.Fprintln(env.Stdout, priv)
	fmt.Fprintf(env.Stderr, "public key (for countersign audit verify -pub): %s\n", pub)
	return exitOK
}
