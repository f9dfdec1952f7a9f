package policy_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
)

func TestRemindersDefaultsAndExplicitOff(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Remind(), policy.DefaultReminders(); got != want || want.Every != 24*time.Hour || !want.CollectNotes {
		t.Errorf("unset section = %+v, want the defaults %+v: a daily digest, notes collected", got, want)
	}
	p, err = policy.Parse(strings.NewReader(minimal + "reminders:\n  every: 0s\n  collect_notes: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Remind(); got != (policy.Reminders{}) {
		t.Errorf("explicit off = %+v, want no digest and no collection", got)
	}
	p, err = policy.Parse(strings.NewReader(minimal + "reminders:\n  at: \"09:30\"\n  timezone: Europe/Berlin\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Remind(); got.At != "09:30" || got.Timezone != "Europe/Berlin" || got.Every != 24*time.Hour || !got.CollectNotes {
		t.Errorf("at and timezone = %+v, want them with the other defaults", got)
	}
}

// A task's snapshot stored before the section existed reads with the defaults;
// one that turned it off stays off.
func TestRemindersOfAnOldSnapshot(t *testing.T) {
	var old policy.Policy
	if err := json.Unmarshal([]byte(`{"tools":{},"retry_budget":2}`), &old); err != nil {
		t.Fatal(err)
	}
	if got := old.Remind(); got != policy.DefaultReminders() {
		t.Errorf("old snapshot = %+v, want the defaults", got)
	}
	off := policy.Policy{Reminders: &policy.Reminders{}}
	b, err := json.Marshal(&off)
	if err != nil {
		t.Fatal(err)
	}
	var back policy.Policy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Remind(); got != (policy.Reminders{}) {
		t.Errorf("stored off = %+v, want off", got)
	}
}

func TestRemindersErrorsNameTheField(t *testing.T) {
	for name, tt := range map[string]struct{ extra, want string }{
		"unknown key":       {"reminders:\n  evry: 24h\n", "line 9: reminders.evry: unknown key"},
		"negative":          {"reminders:\n  every: -1h\n", "reminders.every: must not be negative"},
		"bad time":          {"reminders:\n  at: \"9am\"\n", `reminders.at: want a time of day like "09:00", got "9am"`},
		"at not daily":      {"reminders:\n  every: 12h\n  at: \"09:00\"\n", "reminders.every: a digest at a time of day is daily"},
		"bad zone":          {"reminders:\n  at: \"09:00\"\n  timezone: Mars/Olympus\n", `reminders.timezone: want an IANA time zone`},
		"zone without time": {"reminders:\n  timezone: UTC\n", "reminders.timezone: is the zone of reminders.at"},
		"collect not bool":  {"reminders:\n  collect_notes: yes please\n", "reminders.collect_notes: want true or false"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := policy.Parse(strings.NewReader(minimal + tt.extra))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one with %q", err, tt.want)
			}
		})
	}
}

func TestRemindersSince(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 3, 10, 8, 0, 0, 0, berlin)
	for name, tt := range map[string]struct {
		r    policy.Reminders
		want time.Time
	}{
		"every":              {policy.Reminders{Every: 24 * time.Hour}, now.Add(-24 * time.Hour)},
		"at, later today":    {policy.Reminders{Every: 24 * time.Hour, At: "09:00", Timezone: "Europe/Berlin"}, time.Date(2025, 3, 9, 9, 0, 0, 0, berlin)},
		"at, earlier today":  {policy.Reminders{Every: 24 * time.Hour, At: "07:30", Timezone: "Europe/Berlin"}, time.Date(2025, 3, 10, 7, 30, 0, 0, berlin)},
		"at, UTC by default": {policy.Reminders{Every: 24 * time.Hour, At: "07:30"}, time.Date(2025, 3, 9, 7, 30, 0, 0, time.UTC)},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tt.r.Since(now); !got.Equal(tt.want) {
				t.Errorf("Since(%s) = %s, want %s", now, got, tt.want)
			}
		})
	}
}
