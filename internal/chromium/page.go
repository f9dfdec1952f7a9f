package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Page is a tab of a Browser.
type Page struct {
	b       *Browser
	session string
}

// ErrNoElement is returned when no element matches what Click or Type names.
var ErrNoElement = errors.New("chromium: no such element")

// Eval evaluates the JavaScript expression js in the page, awaits it when it is
// a promise, and decodes its value into out (unless nil). A JavaScript exception
// is returned as an error with its description.
func (p *Page) Eval(ctx context.Context, js string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": js, "awaitPromise": true, "returnByValue": true}, &r)
	switch {
	case err != nil:
		return err
	case r.Exception != nil:
		return fmt.Errorf("chromium: %s %s", r.Exception.Text, r.Exception.Exception.Description)
	case out == nil || len(r.Result.Value) == 0:
		return nil
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		return fmt.Errorf("chromium: the value of %.60q: %w", js, err)
	}
	return nil
}

// WaitFor waits until the JavaScript expression cond is true in the page: it
// is checked now and after every change of the document (a MutationObserver),
// never on a timer. It returns nil, or ctx's error with the page's text, to
// say what the page showed instead.
func (p *Page) WaitFor(ctx context.Context, cond string) error {
	js := `new Promise((resolve) => {
	  const holds = () => { try { return !!(` + cond + `); } catch (e) { return false; } };
	  const watch = () => {
	    if (!document.documentElement) return setTimeout(watch, 10);
	    if (holds()) return resolve(true);
	    const seen = new MutationObserver(() => { if (holds()) { seen.disconnect(); resolve(true); } });
	    seen.observe(document.documentElement, {subtree: true, childList: true, characterData: true, attributes: true});
	  };
	  watch();
	})`
	err := p.Eval(ctx, js, nil)
	if err == nil {
		return nil
	}
	ended, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var text string
	p.Eval(ended, `document.body ? document.body.innerText : ""`, &text)
	return fmt.Errorf("chromium: waiting for %s: %w; the page shows:\n%s", cond, err, text)
}

// Click clicks, with the mouse, the middle of the first element that matches
// selector and whose text contains text ("" for any), scrolled into view. It
// returns ErrNoElement when none does.
func (p *Page) Click(ctx context.Context, selector, text string) error {
	var at *struct{ X, Y float64 }
	js := `(() => {
	  const el = [...document.querySelectorAll(` + quote(selector) + `)].find((e) => e.textContent.includes(` + quote(text) + `));
	  if (!el) return null;
	  el.scrollIntoView({block: "center"});
	  const r = el.getBoundingClientRect();
	  return {X: r.left + r.width / 2, Y: r.top + r.height / 2};
	})()`
	if err := p.Eval(ctx, js, &at); err != nil {
		return err
	}
	if at == nil {
		return fmt.Errorf("%w: %s with %q", ErrNoElement, selector, text)
	}
	for _, kind := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		ev := map[string]any{"type": kind, "x": at.X, "y": at.Y}
		if kind != "mouseMoved" {
			ev["button"], ev["clickCount"] = "left", 1
		}
		if err := p.b.call(ctx, p.session, "Input.dispatchMouseEvent", ev, nil); err != nil {
			return err
		}
	}
	return nil
}

// Type clicks the field that matches selector and types text into it, then
// presses Enter, as a person sends a message.
func (p *Page) Type(ctx context.Context, selector, text string) error {
	if err := p.Click(ctx, selector, ""); err != nil {
		return err
	}
	if err := p.b.call(ctx, p.session, "Input.insertText", map[string]any{"text": text}, nil); err != nil {
		return err
	}
	for _, kind := range []string{"keyDown", "keyUp"} {
		ev := map[string]any{"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}
		if kind == "keyDown" {
			ev["text"] = "\r"
		}
		if err := p.b.call(ctx, p.session, "Input.dispatchKeyEvent", ev, nil); err != nil {
			return err
		}
	}
	return nil
}

// Screenshot returns the page as drawn, in PNG.
func (p *Page) Screenshot(ctx context.Context) ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	b, err := decodeImage(r.Data)
	if err != nil {
		return nil, fmt.Errorf("chromium: screenshot: %w", err)
	}
	return b, nil
}

// quote is s as a JavaScript string literal.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}
