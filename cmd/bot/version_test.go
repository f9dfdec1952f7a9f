package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build information", nil, false, "countersign: version unknown (the binary carries no build information)"},
		{"a checkout without version control", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true,
			"countersign (devel), commit unknown, go1.26.8"},
		{"no version at all", &debug.BuildInfo{Main: debug.Module{}}, true, "countersign (devel), commit unknown"},
		{"a checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs", "git", "vcs.revision", "7a7886f0123456789abcdef0123456789abcdef0", "vcs.time", "2026-12-03T11:40:00Z", "vcs.modified", "false")}, true,
			"countersign (devel), commit 7a7886f01234 (2026-12-03T11:40:00Z), go1.26.8"},
		{"a checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "7a7886f0123456789abcdef0123456789abcdef0", "vcs.modified", "true")}, true,
			"countersign (devel), commit 7a7886f01234 (with uncommitted changes), go1.26.8"},
		{"go install of a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}}, true,
			"countersign v1.4.0, commit unknown, go1.26.8"},
		{"a short revision", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs("vcs.revision", "abc")}, true,
			"countersign v1.4.0, commit abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionLine(tt.info, tt.ok); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestBotVersion(t *testing.T) {
	r := runMain(t, "", nil, "version")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "countersign ") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("countersign version: exit %d, stdout %q, want 0 and one line naming countersign", r.code, r.stdout)
	}
	if r := runMain(t, "", nil, "version", "extra"); r.code != exitUsage {
		t.Errorf("countersign version extra: exit %d, want %d", r.code, exitUsage)
	}
}

// version answers -h with its usage, and --version (or -version), as most
// programs do, with the version line.
func TestVersionIsAskedTheUsualWays(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		if r := runMain(t, "", nil, args...); r.code != exitOK || !strings.HasPrefix(r.stdout, "countersign ") {
			t.Errorf("countersign %s: exit %d, %q; want the version line", strings.Join(args, " "), r.code, r.stdout)
		}
	}
	if r := runMain(t, "", nil, "version", "-h"); r.code != exitOK || !strings.Contains(r.stdout, "usage: countersign version") {
		t.Errorf("countersign version -h: exit %d, %q %q; want its usage, exit 0", r.code, r.stdout, r.stderr)
	}
}
