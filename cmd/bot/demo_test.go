package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/syncbuf"
)

// demoWait bounds each wait of the demo's tests for what the bot does.
const demoWait = 20 * time.Second

// demoRun is a countersign demo running in process: what is typed goes to its standard
// input, and screen is its standard output and error.
type demoRun struct {
	t      *testing.T
	keys   *io.PipeWriter
	screen *syncbuf.Buffer
	cancel context.CancelFunc
	code   chan int
}

func startDemo(t *testing.T, args ...string) *demoRun {
	t.Helper()
	in, keys := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	d := &demoRun{t: t, keys: keys, screen: &syncbuf.Buffer{}, cancel: cancel, code: make(chan int, 1)}
	env := Env{Stdin: in, Stdout: d.screen, Stderr: d.screen, Getenv: func(string) string { return "" }}
	go func() { d.code <- Main(ctx, append([]string{"demo"}, args...), env) }()
	t.Cleanup(func() {
		cancel()
		keys.Close()
		d.exit()
	})
	return d
}

// typeLine types a line and returns where the screen was then.
func (d *demoRun) typeLine(line string) int {
	d.t.Helper()
	at := len(d.screen.String())
	if _, err := io.WriteString(d.keys, line+"\n"); err != nil {
		d.t.Fatalf("typing %q: %v\n%s", line, err, d.screen.String())
	}
	return at
}

// seeAfter waits until the screen shows a match of pattern past offset at,
// and returns the match and its groups.
func (d *demoRun) seeAfter(at int, pattern string) []string {
	d.t.Helper()
	re := regexp.MustCompile(pattern)
	var found []string
	ctx, cancel := context.WithTimeout(context.Background(), demoWait)
	defer cancel()
	err := d.screen.WaitFor(ctx, func(s string) bool {
		found = re.FindStringSubmatch(s[min(at, len(s)):])
		return found != nil
	})
	if err != nil {
		d.t.Fatalf("the screen never showed %q:\n%s", pattern, d.screen.String())
	}
	return found
}

// exit waits for the demo to end and returns its exit code.
func (d *demoRun) exit() int {
	d.t.Helper()
	select {
	case code := <-d.code:
		d.code <- code
		return code
	case <-time.After(demoWait):
		d.t.Fatalf("countersign demo did not end\n%s", d.screen.String())
		return -1
	}
}

// The person's first ten minutes without a token: a send approved with a tap
// arrives in the target chat; a send whose answer is lost becomes an unknown
// outcome, whose notice and envelope appear, and whose It arrived tap resolves
// the envelope. End of input ends the demo with exit 0.
func TestDemoInTheTerminal(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := startDemo(t, "-data", data)
	d.seeAfter(0, `Ctrl-D ends the demo\.`)

	at := d.typeLine("/send 222 hello from the demo")
	d.seeAfter(at, `\[\d+\] ✅ Approve  \[\d+\] ❌ Reject`)
	at = d.typeLine("a")
	d.seeAfter(at, `\[bot → Alex \(222\)\]\n  hello from the demo\n`)
	d.seeAfter(at, `Sent op-[a-z0-9]+ to 222`)

	at = d.typeLine("/demo-unknown")
	d.seeAfter(at, `\(armed: `)
	at = d.typeLine("/send 222 lost on the way back")
	d.seeAfter(at, `Text, exactly as it will be sent`)
	at = d.typeLine("a")
	notice := d.seeAfter(at, `Outcome unknown for (op-[a-z0-9]+)[^\n]*\n  \[(\d+)\] It arrived  \[\d+\] It did not arrive`)
	op := notice[1]
	note := d.seeAfter(at, `\[vault\] `+op+`: the envelope of its unknown outcome is in the vault, (\S+)\n`)
	if !strings.HasPrefix(note[1], filepath.Join(data, "vault", "envelopes")) {
		t.Errorf("envelope at %s, want it in the data folder's vault", note[1])
	}
	d.seeAfter(at, `  operation_id: `+op+`\n(  .*\n)*  status: unknown\n`)
	if b, err := os.ReadFile(note[1]); err != nil || !strings.Contains(string(b), "status: unknown") {
		t.Errorf("envelope file: %v\n%s", err, b)
	}

	at = d.typeLine(notice[2])
	d.seeAfter(at, `\(you tap It arrived\)`)
	d.seeAfter(at, `\[vault\] `+op+`: its envelope changed`)
	d.seeAfter(at, `  status: committed\n`)

	d.keys.Close()
	if code := d.exit(); code != 0 {
		t.Errorf("exit %d at the end of input, want 0\n%s", code, d.screen.String())
	}
	r := runMain(t, "", nil, "ops", "list", "-data", data)
	if strings.Count(r.stdout, "committed") != 2 {
		t.Errorf("ops list after the demo:\n%s\nwant two committed sends (one approved, one resolved delivered)", r.stdout)
	}
}

// Without -data the demo keeps its files in a temporary folder and removes it
// at the end; the bot's log goes there, not on the screen.
func TestDemoCleansUpItsFolder(t *testing.T) {
	d := startDemo(t)
	m := d.seeAfter(0, `Data folder: (\S+) \(the bot's log: (\S+)\)`)
	d.seeAfter(0, `Ctrl-D ends the demo\.`)
	if _, err := os.Stat(m[2]); err != nil {
		t.Fatalf("the bot's log: %v", err)
	}
	d.keys.Close()
	if code := d.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.screen.String())
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("data folder %s after the demo: %v, want it removed", m[1], err)
	}
	if strings.Contains(d.screen.String(), "level=") {
		t.Errorf("log lines on the screen:\n%s", d.screen.String())
	}
}

// A demo line that asks for what the demo does not do is refused before
// anything is made or served.
func TestDemoUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"all interfaces", []string{"-listen", "0.0.0.0:8090"}, 2, "not a loopback address"},
		{"a public name", []string{"-listen", "demo.example:8090"}, 2, "not a loopback address"},
		{"no port", []string{"-listen", "127.0.0.1"}, 2, "-listen"},
		{"an operand", []string{"now"}, 2, `countersign demo: unexpected argument "now"`},
		{"help", []string{"-h"}, 0, "usage: countersign demo [-data DIR] [-listen 127.0.0.1:PORT]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"demo", "-data", data}, tt.args...)
			r := runMain(t, "", nil, args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.says) || !strings.Contains(r.stderr, "usage: countersign demo") {
				t.Errorf("bot %v: exit %d, stderr %q; want %d saying %q and the usage", args, r.code, r.stderr, tt.code, tt.says)
			}
			if _, err := os.Stat(data); err == nil {
				t.Error("the demo made its data folder before refusing its arguments")
			}
		})
	}
}

func TestDemoAddress(t *testing.T) {
	tests := []struct{ listen, want string }{
		{"", ""},
		{":8090", "127.0.0.1:8090"},
		{"127.0.0.1:0", "127.0.0.1:0"},
		{"localhost:8090", "localhost:8090"},
		{"[::1]:8090", "[::1]:8090"},
	}
	for _, tt := range tests {
		if got, err := demoAddress(tt.listen); err != nil || got != tt.want {
			t.Errorf("demoAddress(%q) = %q, %v; want %q", tt.listen, got, err, tt.want)
		}
	}
}

// The demo run again on the same folder hears what is typed: its Telegram,
// new each run, numbers on from where the last run's left off, so the journal
// takes no message or tap of the second run for one it already had.
func TestTheDemoAgainOnItsFolderHearsWhatIsTyped(t *testing.T) {
	data := t.TempDir()
	for run := 1; run <= 2; run++ {
		d := startDemo(t, "-data", data)
		d.seeAfter(0, `Ctrl-D ends the demo\.`)
		at := d.typeLine("/send 222 hello from run " + strconv.Itoa(run))
		d.seeAfter(at, `\[\d+\] ✅ Approve  \[\d+\] ❌ Reject`)
		at = d.typeLine("a")
		d.seeAfter(at, `Sent op-[a-z0-9]+ to 222`)
		d.keys.Close()
		if code := d.exit(); code != 0 {
			t.Fatalf("run %d: exit %d\n%s", run, code, d.screen.String())
		}
	}
	if r := runMain(t, "", nil, "ops", "list", "-data", data); strings.Count(r.stdout, "committed") != 2 {
		t.Errorf("ops list after two runs:\n%s\nwant both sends committed", r.stdout)
	}
}

// The demo's /publish asks a second factor: its card says so, Approve brings
// the bot's question for the code, the terminal shows the code the demo's
// authenticator app would (the demo enrolled the person), and typing it as
// the reply sends the post; a wrong code first is refused.
func TestTheDemoAsksACodeForPublish(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	d.seeAfter(0, `Ctrl-D ends the demo\.`)
	at := d.typeLine("/publish 222 a post that takes a code")
	d.seeAfter(at, `Second factor: TOTP`)
	d.seeAfter(at, `\[\d+\] ✅ Approve  \[\d+\] ❌ Reject`)
	at = d.typeLine("a")
	d.seeAfter(at, `🔐 Approval ap-[a-z0-9]+ of op-[a-z0-9]+ \(publish_post to 222\) asks your TOTP code`)
	code := d.seeAfter(at, `\(your authenticator app shows (\d{6}) now, for \d+ s more: type it\)`)[1]
	wrong := "000000"
	if code == wrong {
		wrong = "000001"
	}
	at = d.typeLine(wrong)
	d.seeAfter(at, `Refused: wrong code \(1 of 5 in a row`)
	at = d.typeLine("a")
	d.seeAfter(at, `🔐 Approval `)
	code = d.seeAfter(at, `\(your authenticator app shows (\d{6}) now`)[1]
	at = d.typeLine(code)
	d.seeAfter(at, `\[bot → Alex \(222\)\]\n  a post that takes a code\n`)
}
