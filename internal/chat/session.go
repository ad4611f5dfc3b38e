package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Session is a terminal chat in one agent session over the HTTP API. Run
// shows the stored conversation, then sends each line read from In as a user
// message and shows the agent's live events on Out: its text as it arrives,
// each tool call and its final status, the usage of each turn, and an inline
// question for each approval, answered by the next line of In.
//
// With piped input Run waits for each turn to end before it reads the next
// message (a line is read earlier only to answer an approval or a
// question, or as /stop or /steer there), so the output is deterministic,
// and returns nil at the end of In once the last turn ended. Interactive,
// it reads while a turn runs: a message typed then asks whether to queue
// it or to steer the turn with it.
//
// Ctrl-C (a value on Interrupts) while a turn runs stops the turn
// (cancel_turn); a second one while the turn is stopping, or within two
// seconds, ends Run with ErrInterrupted, and so does Ctrl-C while no turn
// runs.
type Session struct {
	Client *Client
	// ID is the session to chat in (Client.StartSession starts one).
	ID string
	// Agent, when set, makes Run refuse a session of another agent.
	Agent string

	// In holds the user's lines: messages, and the answers to approvals.
	In io.Reader
	// Out shows the conversation.
	Out io.Writer
	// Notes gets what is not part of the conversation, such as reconnects.
	Notes io.Writer
	// Interactive writes a "you> " prompt before each message is read. Without
	// it (piped input) each line read is echoed to Out instead.
	Interactive bool
	// Interrupts delivers Ctrl-C: each value received is one press. Nil:
	// the one InterruptContext put in Run's context, if any.
	Interrupts <-chan os.Signal

	// RequestTimeout bounds each API call but the event stream (default 60s).
	RequestTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before reconnecting a dropped
	// event stream (defaults 250ms and 5s).
	MinBackoff, MaxBackoff time.Duration
	// IdleTimeout reconnects a stream that sent nothing, not even a
	// keep-alive comment, for this long (default 90s).
	IdleTimeout time.Duration
	// PollInterval reloads the snapshot while a turn runs and no event came
	// for this long (default 5s), so a lost event never stalls the chat.
	PollInterval time.Duration
}

func (s *Session) defaults() {
	if s.RequestTimeout <= 0 {
		s.RequestTimeout = 60 * time.Second
	}
	if s.MinBackoff <= 0 {
		s.MinBackoff = 250 * time.Millisecond
	}
	if s.MaxBackoff < s.MinBackoff {
		s.MaxBackoff = max(5*time.Second, s.MinBackoff)
	}
	if s.IdleTimeout <= 0 {
		s.IdleTimeout = 90 * time.Second
	}
	if s.PollInterval <= 0 {
		s.PollInterval = 5 * time.Second
	}
	if s.Notes == nil {
		s.Notes = io.Discard
	}
}

// ErrPendingApproval reports that In ended while an approval waited for its
// answer; the approval stays pending in the session.
var ErrPendingApproval = errors.New("input ended while an approval or a question waits for an answer")

// ErrInterrupted reports a chat that Ctrl-C ended. It matches
// context.Canceled too.
var ErrInterrupted = fmt.Errorf("the chat was ended with Ctrl-C: %w", context.Canceled)

// ctrlCWindow is how soon after a Ctrl-C a second one ends the chat.
var ctrlCWindow = 2 * time.Second

// Run chats until In ends (nil), ctx ends (ctx.Err()), Ctrl-C ends it
// (ErrInterrupted; it also ends a context of InterruptContext) or the API
// fails.
func (s *Session) Run(ctx context.Context) error {
	if s.Client == nil || s.ID == "" || s.In == nil || s.Out == nil {
		return errors.New("chat: Session needs a Client, an ID, In and Out")
	}
	s.defaults()
	interrupts := s.Interrupts
	h, _ := ctx.Value(ctrlCKey{}).(*ctrlCHandler)
	if interrupts == nil && h != nil {
		ch := make(chan os.Signal, 1)
		h.attach(ch)
		defer h.attach(nil)
		interrupts = ch
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	err := s.run(ctx, interrupts, func() { cancel(ErrInterrupted) })
	if errors.Is(err, ErrInterrupted) || errors.Is(context.Cause(ctx), ErrInterrupted) {
		if h != nil {
			h.cancel()
		}
		return ErrInterrupted
	}
	return err
}

func (s *Session) run(ctx context.Context, interrupts <-chan os.Signal, quit func()) error {
	rctx, rcancel := context.WithTimeout(ctx, s.RequestTimeout)
	view, err := s.Client.SnapshotView(rctx, s.ID)
	rcancel()
	if err != nil {
		return err
	}
	snap, token := view.Snapshot, view.ResumeToken
	if s.Agent != "" && snap.Agent != "" && snap.Agent != s.Agent {
		return fmt.Errorf("session %s is a session of agent %q, not %q", s.ID, snap.Agent, s.Agent)
	}
	c := newLoop(s, snap)
	if view.Ended != "" {
		// An ended session is read-only: its conversation, and no prompt.
		c.showHistory(snap)
		c.note(fmt.Sprintf("(session %s %s: it is read-only)", s.ID, view.Ended))
		return nil
	}
	c.showHistory(snap)
	events := make(chan streamMsg)
	go s.stream(ctx, token, events)
	if interrupts != nil {
		go c.watchCtrlC(ctx, interrupts, quit)
	}
	return c.run(ctx, readLines(ctx, s.In), events)
}

type line struct {
	text string
	err  error
}

// readLines sends In's lines, without their line ends, and closes the
// channel at the end of In.
func readLines(ctx context.Context, in io.Reader) <-chan line {
	ch := make(chan line)
	go func() {
		defer close(ch)
		r := bufio.NewReader(in)
		for {
			s, err := r.ReadString('\n')
			if s != "" {
				select {
				case ch <- line{text: strings.TrimRight(s, "\r\n")}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					select {
					case ch <- line{err: err}:
					case <-ctx.Done():
					}
				}
				return
			}
		}
	}()
	return ch
}
