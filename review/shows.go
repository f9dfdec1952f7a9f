package review

import (
	"fmt"
	"reflect"

	"github.com/countersign/countersign/action"
)

// shown says, for each type a payload is made of, where the page shows each of
// its fields (viewOf): a field not listed is one the page leaves out, and a
// payload that sets it is refused before anyone is asked (Shows). A field added
// to the payload fails TestThePageShowsEveryFieldOfAPayload until it is shown
// here and listed.
var shown = map[reflect.Type]map[string]string{
	reflect.TypeFor[action.Payload](): {
		"Action": "the header", "Target": "the audience", "Text": "the messages, a caption, a poll's question or a request's body",
		"ParseMode": "the messages and their rendering", "Parts": "the messages, one a part", "MessageID": "the quote or the diff",
		"Before": "the quote or the diff", "Removes": "the quote's verb", "Notify": "the quote's verb", "Caption": "the diff",
		"Files": "the files", "Request": "the HTTP request", "Poll": "the poll", "From": "the quote's chat",
		"Changed": "the facts", "Requoted": "the facts", "Audience": "the audience",
	},
	reflect.TypeFor[action.File](): {
		"Kind": "the file", "Name": "the file", "Size": "the file", "SHA256": "the file", "MIME": "the file",
		"Source": "the file", "Caption": "the file",
	},
	reflect.TypeFor[action.HTTPRequest](): {
		"Method": "the request", "URL": "the request and its placeholders", "Headers": "the header names, values withheld",
		"Body": "the body, pretty-printed", "IdempotencyKey": "the headers", "Reconcile": "the request",
	},
	reflect.TypeFor[action.HTTPHeader](): {"Name": "the header", "Env": "where its value comes from", "Prefix": "withheld with the value", "Value": "withheld"},
	reflect.TypeFor[action.Poll]():       {"Options": "the poll", "Public": "the poll", "Multiple": "the poll"},
}

// pageActions are the actions the page shows; fileKinds the kinds of file.
var (
	pageActions = map[string]bool{
		action.SendMessage: true, action.PublishPost: true, action.EditMessage: true, action.DeleteMessage: true,
		action.PinMessage: true, action.UnpinMessage: true, action.HTTP: true, action.SendPhoto: true,
		action.SendDocument: true, action.SendAlbum: true, action.SendPoll: true, action.CopyMessage: true,
		action.ForwardMessage: true,
	}
	fileKinds = map[string]bool{action.FilePhoto: true, action.FileDocument: true}
)

// Shows reports whether the page shows p whole; its error names what the page
// would leave out. The operator asks it of every payload while the page is on
// (operator.Options.Shows), so that an approver is never asked about a payload
// whose review page would show less than what leaves.
func Shows(p action.Payload) error {
	if !pageActions[p.Action] {
		return fmt.Errorf("the review page cannot show a %q action, so nobody is asked to approve it", p.Action)
	}
	for _, f := range p.Files {
		if !fileKinds[f.Kind] {
			return fmt.Errorf("the review page cannot show a file of kind %q, so nobody is asked to approve it", f.Kind)
		}
	}
	if field := unshown(shown, reflect.ValueOf(p), "payload"); field != "" {
		return fmt.Errorf("the review page cannot show the %s this payload sets, so nobody is asked to approve it", field)
	}
	return nil
}

// unshown is the first field set in v (a payload or a part of it) that the
// page does not show by shown, "" for none.
func unshown(shown map[reflect.Type]map[string]string, v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return unshown(shown, v.Elem(), path)
	case reflect.Slice:
		for i := range v.Len() {
			if f := unshown(shown, v.Index(i), path); f != "" {
				return f
			}
		}
		return ""
	case reflect.Struct:
	default:
		return ""
	}
	fields, ok := shown[v.Type()]
	if !ok {
		return "" // a value the page shows whole (action.Audience, by its String)
	}
	for i := range v.NumField() {
		sf, fv := v.Type().Field(i), v.Field(i)
		if !sf.IsExported() || fv.IsZero() {
			continue
		}
		if _, ok := fields[sf.Name]; !ok {
			return path + "." + sf.Name
		}
		if f := unshown(shown, fv, path+"."+sf.Name); f != "" {
			return f
		}
	}
	return ""
}
