package review

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/policy"
)

// ErrBadLink is CheckLink's refusal of a link this bot did not make for that
// approval, payload and person.
var ErrBadLink = errors.New("review: link not made by this bot for this approval, payload and person")

// The labels the page's keys are derived under, one per use, so that no value
// made for one use is taken for another.
const (
	linkLabel = "countersign review link"
	fileLabel = "countersign review file"
)

// Keys are the page's keys, derived from the bot's token: every replica of one
// bot derives the same, so a link one made opens on any, and the token cannot
// be read back from them. The token itself is kept for the init data check,
// which Telegram keys with it.
type Keys struct {
	token      string
	link, file []byte
}

// NewKeys derives the page's keys from token.
func NewKeys(token string) Keys {
	derive := func(label string) []byte {
		mac := hmac.New(sha256.New, []byte(token))
		mac.Write([]byte(label))
		return mac.Sum(nil)
	}
	return Keys{token: token, link: derive(linkLabel), file: derive(fileLabel)}
}

// sum is the base64url HMAC-SHA256 of the parts, each ended by a NUL (no part
// holds one), under key.
func sum(key []byte, parts ...string) string {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write([]byte(p))
		mac.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Link is the credential of a browser link: who it was made for, the payload
// it shows, and the HMAC that binds both to the approval. It travels in the
// link's fragment (#link=USER.SHA256.MAC), which a browser never sends to a
// server nor in a Referer, so no access log or proxy holds it.
type Link struct {
	User   policy.UserID
	SHA256 string
	MAC    string
}

// String is the link's fragment value.
func (l Link) String() string {
	return strconv.FormatInt(int64(l.User), 10) + "." + l.SHA256 + "." + l.MAC
}

// ParseLink reads a fragment value String made.
func ParseLink(s string) (Link, error) {
	f := strings.Split(s, ".")
	if len(f) != 3 {
		return Link{}, ErrBadLink
	}
	user, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || user <= 0 || len(f[1]) != 2*sha256.Size {
		return Link{}, ErrBadLink
	}
	return Link{User: policy.UserID(user), SHA256: f[1], MAC: f[2]}, nil
}

// MakeLink is the link credential for user to review approval apID, whose
// payload hashes to sha.
func (k Keys) MakeLink(apID, sha string, user policy.UserID) Link {
	return Link{User: user, SHA256: sha, MAC: sum(k.link, apID, sha, strconv.FormatInt(int64(user), 10))}
}

// CheckLink reports ErrBadLink unless l was made by MakeLink for apID, its
// payload hash and its user. It says nothing of whether the approval still
// waits or the user may decide it: the server asks the journal.
func (k Keys) CheckLink(apID string, l Link) error {
	want := k.MakeLink(apID, l.SHA256, l.User)
	if !hmac.Equal([]byte(want.MAC), []byte(l.MAC)) {
		return ErrBadLink
	}
	return nil
}

// fileTTL is how long a file address the page was given serves.
const fileTTL = 10 * time.Minute

// fileMAC binds a file's address to the approval it belongs to and a time it
// ends: an <img> cannot carry the page's credential, so the page is given an
// address of its own for each file.
func (k Keys) fileMAC(apID, sha string, until int64) string {
	return sum(k.file, apID, sha, strconv.FormatInt(until, 10))
}

// fileURL is the address of file sha of approval apID, good until until.
func (k Keys) fileURL(prefix, apID, sha string, until time.Time) string {
	u := until.Unix()
	return fmt.Sprintf("%s/file/%s/%s?until=%d&mac=%s", prefix, apID, sha, u, k.fileMAC(apID, sha, u))
}

// equal compares two MACs in constant time.
func equal(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }
