package sqlstore

import "time"

// Millis is how a store keeps a time: Unix milliseconds, the zero time as 0, so
// that one column sorts and compares the same on every backend.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMillis is the time Millis stored, in UTC; 0 is the zero time.
func FromMillis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
