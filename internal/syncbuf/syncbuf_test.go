package syncbuf_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/syncbuf"
)

func TestWaitFor(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
		err    error
	}{
		{"written before the wait", []string{"ready\n"}, "ready", nil},
		{"written during the wait", []string{"a", "b", "c"}, "abc", nil},
		{"never written", []string{"other"}, "ready", context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b syncbuf.Buffer
			b.Write([]byte(tt.writes[0]))
			go func() {
				for _, w := range tt.writes[1:] {
					b.Write([]byte(w))
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if tt.err != nil {
				ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			}
			defer cancel()
			err := b.WaitFor(ctx, func(s string) bool { return strings.Contains(s, tt.want) })
			if !errors.Is(err, tt.err) {
				t.Errorf("WaitFor = %v, want %v", err, tt.err)
			}
		})
	}
}
