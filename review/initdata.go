package review

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/policy"
)

// MaxInitDataAge is how old a Mini App's init data may be: Telegram signs it
// when the app opens, and a page kept open longer is opened again from its card.
const MaxInitDataAge = 30 * time.Minute

// maxInitData bounds the init data read (Telegram's is well under a kilobyte).
const maxInitData = 8 << 10

// The refusals of CheckInitData, each wrapped with what was wrong.
var (
	// ErrMalformed: the init data is not a query string of one value per key
	// with a hash, a user and an auth_date.
	ErrMalformed = errors.New("review: init data malformed")
	// ErrForged: its hash is not the one the bot's token gives.
	ErrForged = errors.New("review: init data not signed with this bot's token")
	// ErrExpired: it was signed longer ago than MaxInitDataAge, or in the future.
	ErrExpired = errors.New("review: init data too old")
)

// InitData is what a Mini App's init data says, parsed; only CheckInitData
// says it is true.
type InitData struct {
	// User is who opened the app.
	User     InitUser
	AuthDate time.Time
	// Hash is the hex HMAC-SHA256 Telegram signed the other fields with.
	Hash string
	// fields are every key but hash with its decoded value, for the check.
	fields map[string]string
}

// InitUser is the user field of init data, in the part the page uses.
type InitUser struct {
	ID        int64  `json:"id"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Name is how the cards name the user: @username or first name, with the id,
// as a tap's decision line does.
func (u InitUser) Name() string {
	name := u.FirstName
	if u.Username != "" {
		name = "@" + u.Username
	}
	return fmt.Sprintf("%s (%d)", name, u.ID)
}

// ParseInitData reads raw init data (the query string Telegram hands a Mini App
// as Telegram.WebApp.initData, or in its URL's #tgWebAppData). It checks the
// shape only; a key given twice is refused, as the check could read either.
func ParseInitData(raw string) (InitData, error) {
	if len(raw) > maxInitData {
		return InitData{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxInitData)
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return InitData{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	d := InitData{fields: map[string]string{}}
	for k, vs := range q {
		if len(vs) != 1 {
			return InitData{}, fmt.Errorf("%w: %q given %d times", ErrMalformed, k, len(vs))
		}
		if k == "hash" {
			d.Hash = vs[0]
			continue
		}
		d.fields[k] = vs[0]
	}
	if len(d.Hash) != 2*sha256.Size {
		return InitData{}, fmt.Errorf("%w: no hash of 64 hex digits", ErrMalformed)
	}
	secs, err := strconv.ParseInt(d.fields["auth_date"], 10, 64)
	if err != nil || secs <= 0 {
		return InitData{}, fmt.Errorf("%w: no auth_date", ErrMalformed)
	}
	d.AuthDate = time.Unix(secs, 0)
	if err := json.Unmarshal([]byte(d.fields["user"]), &d.User); err != nil || d.User.ID <= 0 {
		return InitData{}, fmt.Errorf("%w: no user with an id", ErrMalformed)
	}
	return d, nil
}

// dataCheckString is what Telegram signs: every field but hash as key=value,
// sorted by key, one a line.
func dataCheckString(fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + fields[k]
	}
	return strings.Join(lines, "\n")
}

// initDataHash is the hex HMAC-SHA256 of fields' data-check-string under the
// key Telegram derives from the bot's token (the HMAC-SHA256 of the token
// under the key "WebAppData").
func initDataHash(fields map[string]string, token string) string {
	secret := hmac.New(sha256.New, []byte("WebAppData"))
	secret.Write([]byte(token))
	mac := hmac.New(sha256.New, secret.Sum(nil))
	mac.Write([]byte(dataCheckString(fields)))
	return hex.EncodeToString(mac.Sum(nil))
}

// CheckInitData parses raw and checks it as Telegram documents it: its hash is
// the one the bot's token gives its other fields (compared in constant time),
// and it was signed at most MaxInitDataAge before now (and not more than a
// minute after it, a clock's skew). It returns ErrMalformed, ErrForged or
// ErrExpired, wrapped.
func CheckInitData(raw, token string, now time.Time) (InitData, error) {
	d, err := ParseInitData(raw)
	if err != nil {
		return InitData{}, err
	}
	want := initDataHash(d.fields, token)
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(d.Hash))) {
		return InitData{}, ErrForged
	}
	switch age := now.Sub(d.AuthDate); {
	case age > MaxInitDataAge:
		return InitData{}, fmt.Errorf("%w: signed %s ago, more than %s", ErrExpired, age.Round(time.Second), MaxInitDataAge)
	case age < -time.Minute:
		return InitData{}, fmt.Errorf("%w: signed %s in the future", ErrExpired, (-age).Round(time.Second))
	}
	return d, nil
}

// SignInitData is init data for user as Telegram would sign it with token at
// authDate: for the demo's stand-in Telegram and for tests. extra are more
// fields (query_id, chat_type, …), signed too.
func SignInitData(token string, user InitUser, authDate time.Time, extra map[string]string) string {
	u, _ := json.Marshal(user) // a struct of strings and a number always marshals
	fields := map[string]string{"user": string(u), "auth_date": strconv.FormatInt(authDate.Unix(), 10)}
	for k, v := range extra {
		fields[k] = v
	}
	q := url.Values{}
	for k, v := range fields {
		q.Set(k, v)
	}
	q.Set("hash", initDataHash(fields, token))
	return q.Encode()
}

// UserID is the user as the policy names people.
func (d InitData) UserID() policy.UserID { return policy.UserID(d.User.ID) }
