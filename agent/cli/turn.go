package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
)

// The coordinator's steps of a chat's turn, among replicas (recorded as
// agent.Steps, attempt 0).
const (
	// ActionWaitTurn: another message of the chat runs or goes first; Detail
	// says which replica's message runs, or how many go first. Recorded when
	// that changes.
	ActionWaitTurn model.Action = "wait_turn"
	// ActionTakeTurn: the message took the chat's turn. Cause "lease_expired"
	// when its tries dropped turns whose lease had run out (Detail names them).
	ActionTakeTurn model.Action = "take_turn"
)

// The waits between two tries for a chat's turn: short at first (the run
// before may be ending), doubling to a second.
const (
	turnPollFirst = 50 * time.Millisecond
	turnPollMost  = time.Second
)

// errTurnGiven means the message's place in its chat's queue was given up
// while it waited (its replica stops, or renewed nothing for a lease).
var errTurnGiven = errors.New("the chat's turn was given up")

// turn waits for chat's turn for the message of task taskID: in this process
// (one message of a chat at a time) or, when the journal is a replica's, in the
// journal, among every replica's messages of the chat. It returns ctx, ended
// with a runEnd if the turn is lost while the message holds it (the run is
// ended then, before another replica may take the turn), and the function that
// ends the turn. The error is ctx's when it ended while waiting, errTurnGiven,
// or the journal's.
func (c *Coordinator) turn(ctx context.Context, taskID, chat string) (context.Context, func(), error) {
	j := c.turns
	if c.opts.Journal.Replica() == "" {
		unlock, err := c.chats.lock(ctx, chat)
		return ctx, unlock, err
	}
	t := coord.ChatTurn{Transport: c.opts.Transport, Chat: chat, Task: taskID}
	if err := j.QueueChatTurn(ctx, t); err != nil {
		return ctx, nil, fmt.Errorf("cli: %w", err)
	}
	end := func() {
		if err := j.EndChatTurn(context.WithoutCancel(ctx), t); err != nil {
			// The turn runs out with its lease: the chat's next message waits that long.
			c.opts.Observe(model.Step{Action: model.ActionStop, Cause: "turn_not_ended", Detail: err.Error()})
		}
	}
	if err := c.waitTurn(ctx, t); err != nil {
		end()
		return ctx, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	held := make(chan struct{})
	go func() {
		defer close(held)
		c.holdTurn(ctx, t, cancel)
	}()
	return ctx, func() {
		cancel(nil)
		<-held
		end()
	}, nil
}

// waitTurn tries for t until it takes it, ctx ends, or its place is lost.
func (c *Coordinator) waitTurn(ctx context.Context, t coord.ChatTurn) error {
	wait, said := turnPollFirst, ""
	var lapsed []string // dropped by any try, told with the take
	for {
		try, err := c.turns.TakeChatTurn(ctx, t)
		lapsed = append(lapsed, try.Lapsed...)
		switch {
		case errors.Is(err, coord.ErrChatTurnLost):
			return fmt.Errorf("%w: %v", errTurnGiven, err)
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("cli: %w", err)
		case try.Taken:
			s := model.Step{Action: ActionTakeTurn}
			if len(lapsed) > 0 {
				s.Cause, s.Detail = "lease_expired", fmt.Sprintf("dropped the turn of %v, whose lease ran out", lapsed)
			}
			c.opts.Observe(s)
			return nil
		}
		if say := waitingFor(try); say != said {
			said = say
			c.opts.Observe(model.Step{Action: ActionWaitTurn, Detail: say})
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		wait = min(2*wait, turnPollMost)
	}
}

// waitingFor says what a message that did not get its turn waits for.
func waitingFor(try coord.ChatTurnTry) string {
	if try.Holder != "" {
		return "a message of replica " + try.Holder + " runs"
	}
	return fmt.Sprintf("%d message(s) of the chat go first", try.Ahead)
}

// holdTurn proves t every tenth of the lease while ctx lasts, and ends the run
// (cancel, with a runEnd) once the proof fails: the turn is lost, or its lease
// has too little left for the run to be ended before another replica may take
// it.
func (c *Coordinator) holdTurn(ctx context.Context, t coord.ChatTurn, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(c.opts.Journal.Lease() / 10)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := c.turns.HoldChatTurn(ctx, t)
		if err == nil || ctx.Err() != nil {
			continue
		}
		cancel(&runEnd{cause: "turn_lost", say: "Stopped: this replica could not keep the chat's turn (" + holdWhy(err) +
			"), so its run was ended before another could start. A send already approved still goes out; /ops shows what was done."})
		return
	}
}

// holdWhy is the reason a hold failed, in a few words: the journal's, without
// the database's details.
func holdWhy(err error) string {
	if errors.Is(err, journal.ErrReplicaLost) {
		return "it lost its name lock"
	}
	return "its lease ran short, or the journal did not answer"
}
