package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
)

// runVersion is "countersign version": the module version and the commit the binary was
// built from, for a bug report or to tell two deployed binaries apart.
func runVersion(ctx context.Context, args []string, env Env) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(env.Stdout, "usage: "+env.named("countersign version")+"\n\nPrints the module version and the commit the binary was built from.")
		return exitOK
	}
	if code := checkOperands(env, "countersign version", "countersign version", args); code >= 0 {
		return code
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintln(env.Stdout, versionLine(info, ok))
	return exitOK
}

// versionLine says what info knows of the build: the module's version ("(devel)"
// for a build from a checkout, a tag for go install …@version), the commit and
// its time when the build recorded them, and whether the tree had changes.
func versionLine(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "countersign: version unknown (the binary carries no build information)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	commit := "commit unknown"
	if rev := settings["vcs.revision"]; rev != "" {
		commit = "commit " + rev[:min(len(rev), 12)]
		var notes []string
		if t := settings["vcs.time"]; t != "" {
			notes = append(notes, t)
		}
		if settings["vcs.modified"] == "true" {
			notes = append(notes, "with uncommitted changes")
		}
		if len(notes) > 0 {
			commit += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	line := fmt.Sprintf("countersign %s, %s", version, commit)
	if info.GoVersion != "" {
		line += ", " + info.GoVersion
	}
	return line
}
