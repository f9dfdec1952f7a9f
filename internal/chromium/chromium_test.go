package chromium_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/chromium"
)

// page counts trusted clicks (a person's, not a script's) and lists what is
// typed and sent.
const page = `<!doctype html><html><body>
<button id="b">clicked 0</button>
<form id="f"><input id="t"><button>Send</button></form>
<ul id="sent"></ul>
<script>
let n = 0;
document.getElementById("b").addEventListener("click", (ev) => {
  if (ev.isTrusted) document.getElementById("b").textContent = "clicked " + ++n;
});
document.getElementById("f").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const li = document.createElement("li");
  li.textContent = document.getElementById("t").value;
  document.getElementById("sent").append(li);
  document.getElementById("t").value = "";
});
</script></body></html>`

func TestDrivesAPageAsAPerson(t *testing.T) {
	b := chromium.ForTest(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(page))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := b.Open(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		act  func() error
		see  string
	}{
		{"a click", func() error { return p.Click(ctx, "button", "clicked") }, `document.getElementById("b").textContent === "clicked 1"`},
		{"another", func() error { return p.Click(ctx, "#b", "") }, `document.getElementById("b").textContent === "clicked 2"`},
		{"typing and Enter", func() error { return p.Type(ctx, "#t", "héllo, wörld") }, `document.querySelector("#sent li")?.textContent === "héllo, wörld"`},
	}
	for _, tt := range tests {
		if err := tt.act(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if err := p.WaitFor(ctx, tt.see); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}

	if err := p.Click(ctx, "button", "nowhere"); !errors.Is(err, chromium.ErrNoElement) {
		t.Errorf("Click on nothing = %v, want ErrNoElement", err)
	}
	var sum int
	if err := p.Eval(ctx, `Promise.resolve(40 + 2)`, &sum); err != nil || sum != 42 {
		t.Errorf("Eval of a promise = %d, %v; want 42", sum, err)
	}
	if err := p.Eval(ctx, `no.such.thing`, nil); err == nil || !strings.Contains(err.Error(), "ReferenceError") {
		t.Errorf("Eval of a broken expression = %v, want its ReferenceError", err)
	}
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	if err := p.WaitFor(short, `document.title === "never"`); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "clicked 2") {
		t.Errorf("WaitFor of what never holds = %v, want the deadline and the page's text", err)
	}
	png, err := p.Screenshot(ctx)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("Screenshot = %d bytes, %v; want a PNG", len(png), err)
	}
}
