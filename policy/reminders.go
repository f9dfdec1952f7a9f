package policy

import (
	"time"
	_ "time/tzdata" // reminders.timezone names a zone wherever the bot runs, zoneinfo or not

	"gopkg.in/yaml.v3"
)

// Reminders is how the sweep brings unknown outcomes back to people, and keeps
// the vault small: a digest to the approvers of every outcome still unknown,
// each with its resolve buttons, and the collection of resolved notes whose
// envelope_ttl has passed (what `countersign vault gc` removes). It is the process's
// rule, read from the policy in force, never from a task's snapshot.
type Reminders struct {
	// Every is the time between two digests; 0 sends none.
	Every time.Duration `json:"every"`
	// At, "HH:MM", is the time of day in Timezone the digest goes out (Every is
	// then 24h): at the first sweep at or after it. "" sends it Every after the
	// last one, whenever that was.
	At string `json:"at,omitempty"`
	// Timezone is the IANA zone of At ("" is UTC).
	Timezone string `json:"timezone,omitempty"`
	// CollectNotes lets the sweep remove the resolved, expired notes of the
	// vault, as `countersign vault gc` does. Unresolved notes are never removed.
	CollectNotes bool `json:"collect_notes"`
}

// DefaultReminders are the reminders of a policy that leaves the section out:
// a digest a day, and notes collected.
func DefaultReminders() Reminders {
	return Reminders{Every: 24 * time.Hour, CollectNotes: true}
}

// Remind is the policy's reminders section; a policy made without one (a task's
// snapshot stored before the section existed, a policy built in code) gets
// DefaultReminders.
func (p *Policy) Remind() Reminders {
	if p.Reminders == nil {
		return DefaultReminders()
	}
	return *p.Reminders
}

// Since is when the last digest must have gone out before for a digest to be
// due at now: Every before now, or with At the latest At in Timezone at or
// before now. An invalid At or Timezone (Parse refuses both) counts as none.
func (r Reminders) Since(now time.Time) time.Time {
	h, m, ok := clock(r.At)
	loc, err := time.LoadLocation(r.Timezone)
	if !ok || err != nil {
		return now.Add(-r.Every)
	}
	local := now.In(loc)
	at := time.Date(local.Year(), local.Month(), local.Day(), h, m, 0, 0, loc)
	if at.After(local) {
		at = time.Date(local.Year(), local.Month(), local.Day()-1, h, m, 0, 0, loc)
	}
	return at
}

// clock reads "HH:MM", a time of day.
func clock(s string) (h, m int, ok bool) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, 0, false
	}
	return t.Hour(), t.Minute(), true
}

func (d *decoder) reminders(n *yaml.Node, path string, r *Reminders) {
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"every":         func(n *yaml.Node, f string) { d.duration(n, f, &r.Every) },
		"at":            func(n *yaml.Node, f string) { r.At = d.string(n, f) },
		"timezone":      func(n *yaml.Node, f string) { r.Timezone = d.string(n, f) },
		"collect_notes": func(n *yaml.Node, f string) { d.bool(n, f, &r.CollectNotes) },
	})
}

// validate reports the section's problems through add.
func (r Reminders) validate(add func(field, format string, args ...any)) {
	if r.Every < 0 {
		add("reminders.every", "must not be negative (0 sends no digest), got %s", r.Every)
	}
	if r.At != "" {
		if _, _, ok := clock(r.At); !ok {
			add("reminders.at", "want a time of day like \"09:00\", got %q", r.At)
		}
		if r.Every != 24*time.Hour && r.Every != 0 {
			add("reminders.every", "a digest at a time of day is daily: want 24h (or 0 for none) with reminders.at, got %s", r.Every)
		}
	}
	if _, err := time.LoadLocation(r.Timezone); err != nil {
		add("reminders.timezone", "want an IANA time zone like \"Europe/Berlin\", got %q", r.Timezone)
	} else if r.Timezone != "" && r.At == "" {
		add("reminders.timezone", "is the zone of reminders.at, which is not set")
	}
}
