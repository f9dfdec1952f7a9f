package telegram_test

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	_ "github.com/mattn/go-sqlite3" // the floor's bare inserts

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/filestore"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/verifier"
)

// photoN is photo i of a benchmark: the same 64×48 PNG with i after its end,
// which image decoders never read, so every photo is new to the duplicate check
// and to the fake server's file ids, at one size.
func photoN(base []byte, i int) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), base...), uint64(i))
}

// BenchmarkPhoto is one photo sent to a chat over real HTTP to the fake Bot API:
// "bare" uploads it with go-telegram/bot alone, "lifecycle" sends it through
// the whole gate (read from a root into the content-addressed store, verified,
// journaled, auto-approved, read back and checked against its hash, uploaded,
// committed). The ratio of the two is the gate's overhead for a photo.
func BenchmarkPhoto(b *testing.B) {
	base := telegramtest.PNG(b, 64, 48, 7)
	b.Run("bare", func(b *testing.B) {
		srv := telegramtest.New(telegramtest.Options{Token: token})
		defer srv.Close()
		api, err := bot.New(token, bot.WithServerURL(srv.URL()), bot.WithSkipGetMe())
		if err != nil {
			b.Fatal(err)
		}
		ctx := b.Context() // as a bot's: one that can end
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			img := photoN(base, i)
			if _, err := api.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: target, Photo: &models.InputFileUpload{Filename: "chart.png", Data: bytesReader(img)}, Caption: "chart"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The physical floor of a photo through the gate, in the same run:
	// "bare-stored" is the bare upload after the store's one fsync (the photo
	// kept by its content, filestore.Put), and "floor" adds the four durable
	// single-row inserts a send's journal needs at the least (as
	// BenchmarkBareInsert in operator). "lifecycle" is measured against them.
	b.Run("bare-stored", func(b *testing.B) { benchmarkBareStored(b, base, 0) })
	b.Run("floor", func(b *testing.B) { benchmarkBareStored(b, base, 4) })
	b.Run("lifecycle", func(b *testing.B) {
		op, j, root := benchOperator(b)
		ctx := b.Context() // as a bot's: one that can end
		b.ReportAllocs()
		before := j.Commits()
		for i := 0; b.Loop(); i++ {
			path := filepath.Join(root, "chart.png")
			if err := os.WriteFile(path, photoN(base, i), 0o600); err != nil {
				b.Fatal(err)
			}
			args, _ := json.Marshal(map[string]string{"chat_id": "222", "file": path, "caption": "chart"})
			_, r, err := op.Begin(ctx, journal.Task{Requester: alice, Summary: "bench"}, operator.Call{Tool: "commit_send_photo", Args: args})
			if err != nil || r.Status != action.StatusSucceeded {
				b.Fatalf("photo %d: %+v, %v", i, r, err)
			}
		}
		b.ReportMetric(float64(j.Commits()-before)/float64(b.N), "journal-fsyncs/op")
	})
	// A text through the same gate, for what the photo adds to it.
	b.Run("text-lifecycle", func(b *testing.B) {
		op, j, _ := benchOperator(b)
		ctx := b.Context() // as a bot's: one that can end
		b.ReportAllocs()
		before := j.Commits()
		for i := 0; b.Loop(); i++ {
			args, _ := json.Marshal(map[string]string{"chat_id": "222", "text": fmt.Sprintf("chart %d", i)})
			_, r, err := op.Begin(ctx, journal.Task{Requester: alice, Summary: "bench"}, operator.Call{Tool: "commit_send_message", Args: args})
			if err != nil || r.Status != action.StatusSucceeded {
				b.Fatalf("text %d: %+v, %v", i, r, err)
			}
		}
		b.ReportMetric(float64(j.Commits()-before)/float64(b.N), "journal-fsyncs/op")
	})
}

// benchmarkBareStored stores each photo in a file store (its fsync), makes
// inserts durable single-row inserts into a SQLite file opened with the
// journal's settings, and uploads the photo with go-telegram/bot alone.
func benchmarkBareStored(b *testing.B, base []byte, inserts int) {
	srv := telegramtest.New(telegramtest.Options{Token: token})
	defer srv.Close()
	api, err := bot.New(token, bot.WithServerURL(srv.URL()), bot.WithSkipGetMe())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	files, err := filestore.Open(filepath.Join(dir, "files"))
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "bare.db")+"?_journal_mode=WAL&_busy_timeout=5000&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	ctx := b.Context() // as a bot's: one that can end
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		img := photoN(base, i)
		if _, _, err := files.Put(ctx, bytes.NewReader(img), int64(len(img))); err != nil {
			b.Fatal(err)
		}
		for k := range inserts {
			if _, err := db.Exec("INSERT INTO t(v) VALUES(?)", fmt.Sprintf("photo %d, row %d", i, k)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := api.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: target, Photo: &models.InputFileUpload{Filename: "chart.png", Data: bytesReader(img)}, Caption: "chart"}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchOperator is an operator over a fresh journal, store and fake Bot API,
// sending auto-approved photos and texts to chat 222, with its journal and the
// folder photos are read from.
func benchOperator(b *testing.B) (*operator.Operator, *journal.Journal, string) {
	srv := telegramtest.New(telegramtest.Options{Token: token})
	b.Cleanup(srv.Close)
	dir := b.TempDir()
	root := filepath.Join(dir, "outbox")
	if err := os.Mkdir(root, 0o700); err != nil {
		b.Fatal(err)
	}
	ctx := b.Context() // as a bot's: one that can end
	j, err := journal.Open(ctx, filepath.Join(dir, "journal.db"), journal.WithSeenKey(operator.SeenKey))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	if err := j.Own(ctx, telegram.Transport); err != nil {
		b.Fatal(err)
	}
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p.Tools["commit_send_photo"] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
	p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_photo", Chats: []string{"222"}}, {Tool: "commit_send_message", Chats: []string{"222"}}}
	p.Files.Roots = []string{root}
	files, err := filestore.Open(filepath.Join(dir, "files"))
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tg, err := telegram.New(ctx, j, telegram.Options{Token: token, APIURL: srv.URL(), Limits: fast, Logger: quiet, Files: files})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := tools.NewRegistry(p, tg.Sender(), tools.WithFiles(files))
	if err != nil {
		b.Fatal(err)
	}
	op, err := operator.New(operator.Options{Journal: j, Tools: reg, Policy: p, Logger: quiet, Transport: telegram.Transport,
		Verifier: verifier.New(p.Verify, operator.History{Journal: j}, time.Now)})
	if err != nil {
		b.Fatal(err)
	}
	return op, j, root
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
