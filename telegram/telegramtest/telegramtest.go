// Package telegramtest is the stand-in Bot API (package standin) as the tests
// use it: NewServer starts one that is closed when the test ends, and every
// name of standin is here under the same name, so that a test reads
// telegramtest.Server, telegramtest.Fault and the rest. It is the one package
// of the two that imports testing; the binary links only standin.
package telegramtest

import (
	"testing"

	"github.com/countersign/countersign/telegram/standin"
)

// NewServer starts a stand-in Bot API server that is closed when the test ends.
func NewServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s := standin.New(opts)
	tb.Cleanup(s.Close)
	return s
}

// New starts a server; Close it when done (NewServer does, in a test).
func New(opts Options) *Server { return standin.New(opts) }

// The names of package standin.
type (
	Action          = standin.Action
	BotCommand      = standin.BotCommand
	BotMember       = standin.BotMember
	Call            = standin.Call
	CallbackAnswer  = standin.CallbackAnswer
	Chat            = standin.Chat
	Deliver         = standin.Deliver
	Document        = standin.Document
	Entity          = standin.Entity
	Fault           = standin.Fault
	FloodLimits     = standin.FloodLimits
	Injection       = standin.Injection
	Message         = standin.Message
	Options         = standin.Options
	Origin          = standin.Origin
	PhotoSize       = standin.PhotoSize
	Poll            = standin.Poll
	PollOption      = standin.PollOption
	Server          = standin.Server
	Upload          = standin.Upload
	UploadLimits    = standin.UploadLimits
	User            = standin.User
	Webhook         = standin.Webhook
	WebhookAction   = standin.WebhookAction
	WebhookDelivery = standin.WebhookDelivery
	WebhookError    = standin.WebhookError
	WebhookFault    = standin.WebhookFault
)

var (
	ErrClosed        = standin.ErrClosed
	AcceptThenDrop   = standin.AcceptThenDrop
	AcceptThenHang   = standin.AcceptThenHang
	BadGateway       = standin.BadGateway
	BadGatewayHTML   = standin.BadGatewayHTML
	BotBlocked       = standin.BotBlocked
	Delay            = standin.Delay
	DropBeforeAccept = standin.DropBeforeAccept
	ErrorReply       = standin.ErrorReply
	MigrateTo        = standin.MigrateTo
	PostWebhook      = standin.PostWebhook
	TooManyRequests  = standin.TooManyRequests
	UpdateID         = standin.UpdateID
)

const (
	ActionAcceptThenDrop     = standin.ActionAcceptThenDrop
	ActionAcceptThenHang     = standin.ActionAcceptThenHang
	ActionAcceptThenReply    = standin.ActionAcceptThenReply
	ActionDropBeforeAccept   = standin.ActionDropBeforeAccept
	ActionNone               = standin.ActionNone
	ActionReply              = standin.ActionReply
	DefaultMaxDocumentUpload = standin.DefaultMaxDocumentUpload
	DefaultMaxPhotoUpload    = standin.DefaultMaxPhotoUpload
	DefaultToken             = standin.DefaultToken
	WebhookReplyLost         = standin.WebhookReplyLost
	WebhookTwiceAtOnce       = standin.WebhookTwiceAtOnce
)
