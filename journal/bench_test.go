package journal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/internal/partition"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// BenchmarkConcurrentWriters is a burst of sends written at once by many
// goroutines, as a bot delivering to many chats writes them: each op is one
// send's four durable writes (approval asked, approved, committing, committed).
// "queued" is the journal as it is, its writers queueing on the writer lock;
// "busy handler" is the baseline, the same journal with its writers meeting
// SQLite's busy handler (5 s timeout) instead, as before the lock; "postgres"
// is the journal on PostgreSQL, whose writers run side by side. Besides the
// time per send it reports the slowest sends (p99 and max, in ms): the handler's
// sleeps show in the tail, and a send past the timeout fails the run.
func BenchmarkConcurrentWriters(b *testing.B) {
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, bm := range []struct {
		name  string
		fresh func(b *testing.B) string
		opts  []journal.Option
	}{
		{"queued", sqliteFile, nil},
		// The same queued journal appending nothing to the audit trail: the
		// trail's price on SQLite at 16 writers is the ratio of the two.
		{"queued-unaudited", sqliteFile, []journal.Option{journal.WithoutAudit()}},
		{"busy handler", sqliteFile, []journal.Option{journal.WithoutWriterLock()}},
		{"postgres", func(b *testing.B) string { return pgtest.Fresh(b) }, nil},
		// The same journal appending nothing to the audit trail: the floor the
		// trail's pending records and their flushes stand on.
		{"postgres-unaudited", func(b *testing.B) string { return pgtest.Fresh(b) }, []journal.Option{journal.WithoutAudit()}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			j, err := journal.Open(context.Background(), bm.fresh(b), bm.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			var mu sync.Mutex
			var took []time.Duration
			var n atomic.Int64
			b.SetParallelism(8) // 16 writers on two cores: more than the cores, as in a burst
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := b.Context() // as a bot's: one that can end
				for pb.Next() {
					start := time.Now()
					if err := send(ctx, j, p, n.Add(1)); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					took = append(took, time.Since(start))
					mu.Unlock()
				}
			})
			b.StopTimer()
			slices.Sort(took)
			if len(took) > 0 {
				b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
				b.ReportMetric(ms(took[len(took)-1]), "max-ms")
			}
		})
	}
}

// BenchmarkConcurrentWritersPaired is BenchmarkConcurrentWriters' burst on
// two journals in turn, in bursts of 64 sends by 16 writers, which journal
// goes first alternating, so that a machine whose load drifts during the run
// weighs on both alike: the ratios of BenchmarkConcurrentWriters' rows,
// measured side by side. It reports each one's time per send (a-ms, b-ms),
// their ratio (x = a ÷ b) and each one's p99 (a-p99-ms, b-p99-ms). "chain"
// pairs a journal with the audit trail (a) and the same without it (b);
// "postgres÷sqlite" PostgreSQL (a) and SQLite (b), both with the trail.
func BenchmarkConcurrentWritersPaired(b *testing.B) {
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pg := func(b *testing.B) string { return pgtest.Fresh(b) }
	type side struct {
		fresh func(b *testing.B) string
		opts  []journal.Option
	}
	for _, bm := range []struct {
		name string
		a, b side
	}{
		{"chain/sqlite", side{sqliteFile, nil}, side{sqliteFile, []journal.Option{journal.WithoutAudit()}}},
		{"chain/postgres", side{pg, nil}, side{pg, []journal.Option{journal.WithoutAudit()}}},
		{"postgres÷sqlite", side{pg, nil}, side{sqliteFile, nil}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			var js [2]*journal.Journal
			for i, sd := range []side{bm.a, bm.b} {
				j, err := journal.Open(context.Background(), sd.fresh(b), sd.opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer j.Close()
				js[i] = j
			}
			const burst, writers = 64, 16
			var took [2]time.Duration
			var lat [2][]time.Duration
			var n atomic.Int64
			b.ResetTimer()
			for done, round := 0, 0; done < b.N; round++ {
				size := min(burst, b.N-done)
				for k := range 2 {
					which := (round + k) % 2
					var mu sync.Mutex
					var left atomic.Int64
					left.Store(int64(size))
					var wg sync.WaitGroup
					start := time.Now()
					for range writers {
						wg.Go(func() {
							ctx := b.Context() // as a bot's: one that can end
							for left.Add(-1) >= 0 {
								t0 := time.Now()
								if err := send(ctx, js[which], p, n.Add(1)); err != nil {
									b.Error(err)
									return
								}
								mu.Lock()
								lat[which] = append(lat[which], time.Since(t0))
								mu.Unlock()
							}
						})
					}
					wg.Wait()
					took[which] += time.Since(start)
				}
				done += size
			}
			b.StopTimer()
			for i, name := range []string{"a", "b"} {
				b.ReportMetric(ms(took[i])/float64(b.N), name+"-ms")
				if l := lat[i]; len(l) > 0 {
					slices.Sort(l)
					b.ReportMetric(ms(l[len(l)*99/100]), name+"-p99-ms")
				}
			}
			b.ReportMetric(float64(took[0])/float64(took[1]), "x")
		})
	}
}

func sqliteFile(b *testing.B) string { return filepath.Join(b.TempDir(), "j.db") }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// send writes one send's lifecycle as the operator does, in its four durable
// transactions.
func send(ctx context.Context, j *journal.Journal, p *policy.Policy, n int64) error {
	now := time.Now()
	a := &journal.Approval{ID: journal.NewID("ap"), Requester: 7, Created: now, Expires: now.Add(time.Hour)}
	o := operation("telegram")
	o.Payload.Text = fmt.Sprintf("message %d", n)
	_, o, err := j.CreateFirstOperation(ctx, journal.Task{Requester: 7, Policy: p, Origin: fmt.Sprintf("bench:%d", n)}, o, "prepared",
		journal.Move{From: journal.Prepared, To: journal.Verified},
		journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Approval: a})
	if err != nil {
		return err
	}
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 7); err != nil {
		return err
	}
	if err := j.Move(ctx, o.ID, journal.Move{From: journal.Approved, To: journal.Committing, StartAttempt: true}); err != nil {
		return err
	}
	return j.Move(ctx, o.ID, journal.Move{From: journal.Committing, To: journal.Committed, AttemptOutcome: "committed"})
}

// BenchmarkHold is the fence's price: the read a commit's sender makes right
// before each write (ProveHolding), for a replica on both journals (on PostgreSQL over
// the session that holds its name lock), beside the durable move to committing
// that every attempt already makes, as its baseline in the same run.
func BenchmarkHold(b *testing.B) {
	for _, be := range []struct {
		name  string
		fresh func(testing.TB) string
	}{
		{"sqlite", func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "j.db") }},
		{"postgres", func(tb testing.TB) string { return pgtest.Fresh(tb) }},
	} {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			j, err := journal.Open(ctx, be.fresh(b))
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			if err := j.Join(ctx, "telegram", "r1", 0); err != nil {
				b.Fatal(err)
			}
			_, op := newOp(b, j)
			for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.Approved},
				{From: journal.Approved, To: journal.Committing, StartAttempt: true}} {
				if err := j.Move(ctx, op.ID, m); err != nil {
					b.Fatal(err)
				}
			}
			f := journal.Fence{Operation: op.ID, Attempt: 1}
			b.Run("hold", func(b *testing.B) {
				for b.Loop() {
					if err := j.ProveHolding(ctx, f); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("move to committing (baseline)", func(b *testing.B) {
				for b.Loop() {
					// committing -> approved -> committing: two durable moves, reported per move.
					if err := j.Move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Approved}); err != nil {
						b.Fatal(err)
					}
					if err := j.Move(ctx, op.ID, journal.Move{From: journal.Approved, To: journal.Committing}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N)/1e6, "ms/move")
			})
		})
	}
}

// BenchmarkInboxReplicas is the inbox's side of scaling out on PostgreSQL:
// updates taken per second by one replica and by three on one journal, in the
// same run. Each replica takes updates as its webhook does, a few at once
// (takers), each one stored durably in the inbox before it is answered and
// marked handled once done (a lazy write). It reports updates/s; the ratio of
// the two runs is what a replica adds.
//
// It runs twice: with the database on this host ("local"), where one replica
// already keeps the cores busy and the ratio says more of the machine than of
// the journal; and with the database a round trip of 1 ms away ("rtt=1ms", a
// server across a network), where a replica's takers wait on the network and
// a second and third add takers, unless something makes them queue.
func BenchmarkInboxReplicas(b *testing.B) {
	const takers = 2 // per replica
	for _, db := range []struct {
		name  string
		delay time.Duration // each way
	}{{"local", 0}, {"rtt=1ms", 500 * time.Microsecond}} {
		for _, replicas := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/replicas=%d", db.name, replicas), func(b *testing.B) {
				ctx := context.Background()
				name := pgtest.Fresh(b)
				if db.delay > 0 {
					var p *partition.Proxy
					name, p = pgtest.Through(b, name)
					p.Delay = db.delay
				}
				var js []*journal.Journal
				for r := range replicas {
					j, err := journal.Open(ctx, name)
					if err != nil {
						b.Fatal(err)
					}
					defer j.Close()
					if err := j.Join(ctx, "telegram", fmt.Sprintf("r%d", r+1), 0); err != nil {
						b.Fatal(err)
					}
					js = append(js, j)
					renewing(b, j)
				}
				var n atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for w := range replicas * takers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						j := js[w%replicas]
						for {
							i := n.Add(1)
							if i > int64(b.N) {
								return
							}
							fresh, err := j.Receive(ctx, []journal.InboxItem{{UpdateID: i, Body: []byte(`{"update_id":1}`)}})
							if err == nil && len(fresh) == 1 {
								err = j.Handled(ctx, fresh[0].Key)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
			})
		}
	}
}

// renewing renews j's leases every second until the benchmark ends, as the
// operator does for a replica (its journal's claims, then what it holds
// beside them in coord): the renewal's transactions run beside the work
// measured.
func renewing(b *testing.B, j *journal.Journal) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	shared := coord.New(j)
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if j.RenewLeases(ctx) == nil {
				_ = shared.RenewLeases(ctx) // a lapse shows in no figure here
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	b.Cleanup(func() { cancel(); <-done })
}
