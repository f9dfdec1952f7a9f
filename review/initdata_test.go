package review

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Init data Telegram signed, as published with its bot's token in the
// documentation of the Mini Apps libraries (init-data-golang's and
// telegram-init-data's): the check must take Telegram's own signatures,
// the newer signature field included.
var published = []struct {
	name, token, raw string
	user             int64
}{
	{"with a signature field", "7342037359:AAHI25ES9xCOMPokpYoz-p8XVrZUdygo2J4",
		"user=%7B%22id%22%3A279058397%2C%22first_name%22%3A%22Vladislav%20%2B%20-%20%3F%20%5C%2F%22%2C%22last_name%22%3A%22Kibenko%22%2C%22username%22%3A%22vdkfrost%22%2C%22language_code%22%3A%22ru%22%2C%22is_premium%22%3Atrue%2C%22allows_write_to_pm%22%3Atrue%2C%22photo_url%22%3A%22https%3A%5C%2F%5C%2Ft.me%5C%2Fi%5C%2Fuserpic%5C%2F320%5C%2F4FPEE4tmP3ATHa57u6MqTDih13LTOiMoKoLDRG4PnSA.svg%22%7D&chat_instance=8134722200314281151&chat_type=private&auth_date=1733509682&signature=TYJxVcisqbWjtodPepiJ6ghziUL94-KNpG8Pau-X7oNNLNBM72APCpi_RKiUlBvcqo5L-LAxIc3dnTzcZX_PDg&hash=a433d8f9847bd6addcc563bff7cc82c89e97ea0d90c11fe5729cae6796a36d73",
		279058397},
	{"with a query id", "5768337691:AAH5YkoiEuPk8-FZa32hStHTqXiLPtAEhx8",
		"query_id=AAHdF6IQAAAAAN0XohDhrOrc&user=%7B%22id%22%3A279058397%2C%22first_name%22%3A%22Vladislav%22%2C%22last_name%22%3A%22Kibenko%22%2C%22username%22%3A%22vdkfrost%22%2C%22language_code%22%3A%22ru%22%2C%22is_premium%22%3Atrue%7D&auth_date=1662771648&hash=c501b71e775f74ce10e377dea85a7ea24ecd640b223ea86dfe453e0eaed2e2b2",
		279058397},
}

func TestInitDataTelegramSignedChecks(t *testing.T) {
	for _, p := range published {
		t.Run(p.name, func(t *testing.T) {
			d, err := ParseInitData(p.raw)
			if err != nil {
				t.Fatal(err)
			}
			got, err := CheckInitData(p.raw, p.token, d.AuthDate.Add(time.Minute))
			if err != nil || got.User.ID != p.user {
				t.Fatalf("check = %+v, %v; want user %d", got.User, err, p.user)
			}
			if _, err := CheckInitData(p.raw, p.token[:len(p.token)-1]+"x", d.AuthDate); !errors.Is(err, ErrForged) {
				t.Errorf("under another token: %v, want ErrForged", err)
			}
			tampered := strings.Replace(p.raw, "279058397", "279058398", 1)
			if _, err := CheckInitData(tampered, p.token, d.AuthDate); !errors.Is(err, ErrForged) {
				t.Errorf("another user's id in it: %v, want ErrForged", err)
			}
			if _, err := CheckInitData(p.raw, p.token, d.AuthDate.Add(MaxInitDataAge+time.Second)); !errors.Is(err, ErrExpired) {
				t.Errorf("%s after: %v, want ErrExpired", MaxInitDataAge+time.Second, err)
			}
		})
	}
}

// What SignInitData signs, CheckInitData takes; and the data-check-string is
// Telegram's: sorted keys, one a line, the hash left out.
func TestSignedInitDataChecksAndNothingElseDoes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	raw := SignInitData("1:x", InitUser{ID: 42, FirstName: "Ann", Username: "ann"}, now, map[string]string{"query_id": "q"})
	d, err := CheckInitData(raw, "1:x", now)
	if err != nil || d.User.ID != 42 || d.User.Name() != "@ann (42)" {
		t.Fatalf("check = %+v, %v", d, err)
	}
	if got, want := dataCheckString(d.fields), "auth_date=1800000000\nquery_id=q\nuser="+d.fields["user"]; got != want {
		t.Errorf("data-check-string = %q, want %q", got, want)
	}
	cases := map[string]struct {
		raw  string
		want error
	}{
		"no hash":            {strings.Split(raw, "&hash=")[0], ErrMalformed},
		"a key twice":        {raw + "&query_id=r", ErrMalformed},
		"signed in a minute": {SignInitData("1:x", InitUser{ID: 42}, now.Add(2*time.Minute), nil), ErrExpired},
		"no user":            {strings.Replace(raw, "user=", "usr=", 1), ErrMalformed},
		"another token":      {SignInitData("2:x", InitUser{ID: 42}, now, nil), ErrForged},
	}
	for name, c := range cases {
		if _, err := CheckInitData(c.raw, "1:x", now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// FuzzParseInitData: any input is refused or parsed into a user with an id
// and a hash of 64 digits; and only what is signed with the token checks.
func FuzzParseInitData(f *testing.F) {
	for _, p := range published {
		f.Add(p.raw)
	}
	f.Add(SignInitData("1:x", InitUser{ID: 7, FirstName: "A"}, time.Unix(1_800_000_000, 0), nil))
	f.Add("user=%7B%22id%22%3A1%7D&auth_date=1&hash=" + strings.Repeat("0", 64))
	f.Add("hash=&hash=")
	f.Fuzz(func(t *testing.T, raw string) {
		d, err := ParseInitData(raw)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("refusal %v does not wrap ErrMalformed", err)
			}
			return
		}
		if d.User.ID <= 0 || len(d.Hash) != 64 || d.AuthDate.Unix() <= 0 {
			t.Fatalf("parsed %+v: a user with an id, a hash and a date were promised", d)
		}
		if _, err := CheckInitData(raw, "1:x", d.AuthDate); err == nil && initDataHash(d.fields, "1:x") != strings.ToLower(d.Hash) {
			t.Fatalf("checked without its hash being the token's")
		}
	})
}
