package telegram

import "testing"

// The keys must be those journal/migrations/sqlite/0004_inbox_key.sql gives the rows
// stored before keys, or a redelivery across the upgrade would be taken as new.
func TestUpdateKeysMatchTheInboxMigration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		id   int64
		body string
		want string
	}{
		{"message", 41, `{"update_id":41,"message":{"message_id":5,"chat":{"id":100,"type":"private"},"text":"/ops"}}`, "message:100:5"},
		{"group message", 44, `{"update_id":44,"message":{"message_id":9,"chat":{"id":-1001234567890,"type":"supergroup"}}}`, "message:-1001234567890:9"},
		{"callback query", 42, `{"update_id":42,"callback_query":{"id":"4000000000000000001","data":"ap1:x:y"}}`, "callback_query:4000000000000000001"},
		{"other kind", 43, `{"update_id":43,"edited_message":{"message_id":5,"chat":{"id":100,"type":"private"}}}`, "update:43"},
		{"not JSON", 45, `{"update_id":45,`, "update:45"},
	} {
		if got := updateKey(tt.id, []byte(tt.body)); got != tt.want {
			t.Errorf("%s: updateKey = %q, want %q", tt.name, got, tt.want)
		}
	}
}
