package review

import (
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
)

// Every field of every type a payload is made of is one the page shows: a
// field added to the payload fails here until viewOf shows it and shown lists
// it, and until then Shows refuses the payloads that set it.
func TestThePageShowsEveryFieldOfAPayload(t *testing.T) {
	for typ, fields := range shown {
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() && fields[f.Name] == "" {
				t.Errorf("%s.%s: the page does not say where it shows it", typ.Name(), f.Name)
			}
		}
		for name := range fields {
			if _, ok := typ.FieldByName(name); !ok {
				t.Errorf("%s has no field %s to show", typ.Name(), name)
			}
		}
	}
}

// A payload the page cannot show whole is refused, naming what it would
// leave out; every payload the page shows passes.
func TestShowsRefusesWhatThePageWouldLeaveOut(t *testing.T) {
	whole := action.Payload{Action: action.SendAlbum, Target: "222", Text: "two photos",
		Files:    []action.File{{Kind: action.FilePhoto, Name: "a.png", SHA256: "ab"}, {Kind: action.FileDocument, Name: "b.pdf", SHA256: "cd"}},
		Audience: &action.Audience{Name: "Team", Type: "group"}}
	if err := Shows(whole); err != nil {
		t.Errorf("an album the page shows: %v", err)
	}
	req := action.Payload{Action: action.HTTP, Target: "api.example.com",
		Request: &action.HTTPRequest{Method: "POST", URL: "https://api.example.com/x", Headers: []action.HTTPHeader{{Name: "Authorization", Env: "API_TOKEN"}}}}
	if err := Shows(req); err != nil {
		t.Errorf("an HTTP request the page shows: %v", err)
	}
	req.Request.Headers[0].Prefix = "Bearer "
	for _, c := range []struct {
		name  string
		p     action.Payload
		words string
	}{
		{"an action the page does not know", action.Payload{Action: "send_sticker", Target: "222"}, `a "send_sticker" action`},
		{"a file of a kind the page does not know", action.Payload{Action: action.SendDocument, Files: []action.File{{Kind: "voice"}}}, `a file of kind "voice"`},
	} {
		if err := Shows(c.p); err == nil || !strings.Contains(err.Error(), c.words) || !strings.Contains(err.Error(), "nobody is asked") {
			t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.words)
		}
	}
}

// A field the page does not list, standing for one added to the payload
// since, is found wherever it is set, down to a header of a request.
func TestUnshownFindsAFieldSetDeepInThePayload(t *testing.T) {
	fewer := map[reflect.Type]map[string]string{}
	for typ, fields := range shown {
		fewer[typ] = fields
	}
	header := reflect.TypeFor[action.HTTPHeader]()
	fewer[header] = map[string]string{"Name": "the header", "Env": "where its value comes from", "Value": "withheld"}
	p := action.Payload{Action: action.HTTP, Request: &action.HTTPRequest{Method: "POST", URL: "https://x.example",
		Headers: []action.HTTPHeader{{Name: "Accept"}, {Name: "Authorization", Env: "API_TOKEN", Prefix: "Bearer "}}}}
	if got := unshown(fewer, reflect.ValueOf(p), "payload"); got != "payload.Request.Headers.Prefix" {
		t.Errorf("unshown = %q, want payload.Request.Headers.Prefix", got)
	}
	p.Request.Headers[1].Prefix = ""
	if got := unshown(fewer, reflect.ValueOf(p), "payload"); got != "" {
		t.Errorf("unshown = %q with the field unset, want none", got)
	}
}
