package chat

import (
	"context"
	"fmt"
	"strings"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Turn control in the chat: Ctrl-C and /stop cancel the running turn,
// /steer TEXT steers it, and a message typed while a turn runs asks
// whether to queue it or to steer the turn with it.

// interrupted handles a Ctrl-C the loop took: it stops the running turn,
// or ends the chat when no turn runs.
func (c *loop) interrupted(ctx context.Context) error {
	c.out.endLine()
	if !c.busy {
		return ErrInterrupted
	}
	stopped, err := c.cancelTurn(ctx, "(stopping the turn… Ctrl-C again to quit)")
	if err != nil {
		return err
	}
	if !stopped {
		return ErrInterrupted
	}
	return nil
}

// stop handles /stop.
func (c *loop) stop(ctx context.Context) error {
	stopped, err := c.cancelTurn(ctx, "(stopping the turn…)")
	if err == nil && !stopped {
		c.note("(no turn is running)")
	}
	return err
}

// cancelTurn cancels the session's active turn, after the note. It
// reports whether a turn was running to cancel; it returns an error only
// when the chat must end.
func (c *loop) cancelTurn(ctx context.Context, note string) (bool, error) {
	c.reload(ctx)
	id := activeTurnID(c.snap)
	if id == "" {
		return false, ctx.Err()
	}
	c.note(note)
	c.stopTurn = id
	c.stopping.Store(true)
	rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	ok, err := c.s.Client.CancelTurn(rctx, c.s.ID, id)
	cancel()
	if !ok {
		c.stopTurn = ""
		c.stopping.Store(false)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return true, ctx.Err()
	case err != nil && sessionClosed(err):
		return true, c.closed()
	case err != nil && c.s.Interactive:
		c.note(fmt.Sprintf("(the turn was not stopped: %v)", err))
	case err != nil:
		return true, fmt.Errorf("stop turn %s: %w", id, err)
	case !ok:
		c.note("(the turn was not stopped: " + c.noControl(ctx, id) + ")")
	default:
		c.dropPrompts()
	}
	return true, nil
}

// noControl says why the session did not take a stop or a steer of turn
// id, from the snapshot loaded after it.
func (c *loop) noControl(ctx context.Context, id string) string {
	if !c.reload(ctx) {
		return "the session refused it"
	}
	st := c.snap.State
	switch {
	case st == nil || st.ActiveTurnID == "" || (id != "" && st.ActiveTurnID != id):
		return "it had ended already"
	case !st.AcceptsTurnControl:
		return "a worker without turn control started it; it runs to its end"
	}
	return "the session refused it"
}

// steer handles /steer TEXT: the running turn ends at its next safe step
// and the next turn starts with TEXT; while no turn runs, TEXT starts one.
func (c *loop) steer(ctx context.Context, text string) error {
	if text == "" {
		c.note("(/steer TEXT ends the running turn at its next safe step; the next turn starts with TEXT)")
		return nil
	}
	running := c.busy
	rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	ok, err := c.s.Client.Steer(rctx, c.s.ID, text)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && sessionClosed(err):
		return c.closed()
	case err != nil && c.s.Interactive:
		c.note(fmt.Sprintf("(not steered: %v)", err))
	case err != nil:
		return fmt.Errorf("steer the turn: %w", err)
	case !ok && running:
		c.note("(not steered: " + c.noControl(ctx, "") + ")")
	case !ok:
		c.note("(the session did not accept the message)")
	default:
		c.busy = true
		if running {
			c.dropPrompts()
			c.note("(steering: the turn ends at its next safe step, then your message starts the next turn)")
		}
	}
	return nil
}

// answerChoice takes the answer to "queue it or steer with it?".
func (c *loop) answerChoice(ctx context.Context, answer string) error {
	ch := c.choice
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "q", "queue":
		c.choice = nil
		return c.queue(ctx, ch.text)
	case "s", "steer":
		c.choice = nil
		return c.steer(ctx, ch.text)
	}
	c.note("(answer q to queue the message for after the turn, or s to steer the turn with it)")
	return nil
}

// queue sends a message with mode queue: it starts a turn once the
// running turn and the messages before it are done.
func (c *loop) queue(ctx context.Context, text string) error {
	running := c.busy
	sent, err := c.send(ctx, "the message", "(the session did not accept the message)", func(ctx context.Context) (bool, error) {
		return c.s.Client.SendMessageMode(ctx, c.s.ID, text, SendModeQueue)
	})
	if sent && running {
		c.note("(queued: it starts the next turn once this one ends)")
	}
	return err
}

// send sends a message with call and handles its answer: an error of a
// closed session ends the chat's sending, other errors are notes in a
// terminal (the chat goes on) and errors otherwise; refused is the note
// for a message the session did not take. It reports whether the session
// took the message (a turn then runs or waits).
func (c *loop) send(ctx context.Context, what, refused string, call func(context.Context) (bool, error)) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	ok, err := call(rctx)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return false, ctx.Err()
	case err != nil && sessionClosed(err):
		return false, c.closed()
	case err != nil && c.s.Interactive:
		c.note(fmt.Sprintf("(not sent: %v)", err))
		return false, nil
	case err != nil:
		return false, fmt.Errorf("send %s: %w", what, err)
	case !ok:
		c.note(refused)
		return false, nil
	}
	c.busy = true
	return true, nil
}

// closed handles a 409 session_closed: a terminal gets a note and the
// chat goes on (the conversation stays readable); piped input ends with
// the error.
func (c *loop) closed() error {
	err := closedError{id: c.s.ID}
	if c.s.Interactive {
		c.note("(" + err.Error() + ")")
		return nil
	}
	c.out.endLine()
	return err
}

// dropPrompts forgets the prompts of the turn this chat stopped or
// steered: the session cancels their interrupts, and interrupt_resolved
// then says so.
func (c *loop) dropPrompts() {
	for _, p := range c.prompts {
		c.dropped[p.interruptID] = p
		if p.shown {
			c.out.endLine()
		}
	}
	c.prompts = nil
	c.reason = false
}

// interruptCancelled shows an approval or a question that a steer or a
// cancel ended before it was answered.
func (c *loop) interruptCancelled(p wire.InterruptResolvedPayload) {
	pr := c.dropped[p.InterruptID]
	delete(c.dropped, p.InterruptID)
	for i, q := range c.prompts {
		if q.interruptID != p.InterruptID {
			continue
		}
		pr = q
		if q.shown {
			c.out.endLine()
			c.out.printf("\n")
		}
		c.prompts = append(c.prompts[:i], c.prompts[i+1:]...)
		if i == 0 {
			c.reason = false
		}
		break
	}
	toolCallID, known := c.callOfIn[p.InterruptID]
	what := ""
	switch {
	case pr != nil:
		what = pr.what()
	case known && c.callOf(toolCallID).name != "":
		if p.Kind == InterruptKindQuestion {
			what = "the question of " + c.callOf(toolCallID).name
		} else {
			what = "the approval of " + c.callOf(toolCallID).name
		}
	default:
		return // never shown
	}
	if known {
		c.callOf(toolCallID).cancelled = p.CancellationReason
	}
	c.note(fmt.Sprintf("(%s was cancelled: %s)", what, controlReason(p.CancellationReason)))
}

// controlReason says a cancellation reason in words.
func controlReason(reason string) string {
	switch reason {
	case wire.CancellationSteered:
		return "the turn was steered"
	case wire.CancellationTurnCancelled:
		return "the turn was stopped"
	}
	return strings.ReplaceAll(reason, "_", " ")
}
