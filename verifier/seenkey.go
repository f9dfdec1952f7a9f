package verifier

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"unicode"
)

// SeenKey is a digest of what the duplicate check compares: a text as its
// recipient reads it (Seen), without regard to case, and the SHA-256 sums of
// the files sent with it, in order. Two payloads the check finds the same have
// the same key, so a store that keeps each operation's key can hand the check
// only the operations of one key (History.Recent) instead of every one sent to
// the target in the window: the check's cost no longer grows with a chat's
// traffic. The check still compares what it is handed, so two payloads whose
// keys collide are not taken for the same. A change to Seen changes the keys:
// the stored ones must then be cleared, and are read as unknown.
func SeenKey(text, parseMode string, files []string) string {
	h := sha256.New()
	field(h, foldCase(Seen(text, parseMode)))
	for _, f := range files {
		field(h, f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// field writes s to h after its length, so that no two lists of fields write
// the same bytes.
func field(h hash.Hash, s string) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
	h.Write([]byte(s))
}

// foldCase maps each rune of s to the least rune that folds to it
// (unicode.SimpleFold's orbit): two strings are equal under strings.EqualFold,
// which the check compares by, exactly when their foldCase are equal.
func foldCase(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		out = append(out, least)
	}
	return string(out)
}
