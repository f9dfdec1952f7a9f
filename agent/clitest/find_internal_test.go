package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindLooksInOrderAndSaysHowToInstall(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	cached := filepath.Join(cache, "countersign", "npm", "node_modules", "@x", "tool", "bin", "tool")
	os.MkdirAll(filepath.Dir(cached), 0o700)
	os.WriteFile(cached, []byte("#!/bin/sh\n"), 0o700)
	tool := Tool{Name: "Tool", Package: "@x/tool@1.2.3", Env: "CLITEST_TOOL", Paths: []string{"@x/tool/bin/tool"}, Command: "clitest-no-such-tool"}
	tests := []struct {
		name, env, cache, want, err string
	}{
		{"the variable first", bin, cache, bin, ""},
		{"a variable that names nothing", filepath.Join(dir, "none"), cache, "", "CLITEST_TOOL=" + filepath.Join(dir, "none")},
		{"the npm cache", "", cache, cached, ""},
		{"nowhere", "", t.TempDir(), "", "not found in $CLITEST_TOOL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CLITEST_TOOL", tt.env)
			t.Setenv("XDG_CACHE_HOME", tt.cache)
			got, err := tool.find()
			if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("find = %q, %v; want %q and an error naming %q", got, err, tt.want, tt.err)
			}
			if err != nil {
				msg := tool.missing(err)
				for _, w := range []string{"@x/tool@1.2.3", ".ci/run", "CLITEST_TOOL", filepath.Join(tt.cache, "countersign", "npm")} {
					if !strings.Contains(msg, w) {
						t.Errorf("message %q does not name %s", msg, w)
					}
				}
			}
		})
	}
}
