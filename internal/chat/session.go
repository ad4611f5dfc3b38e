package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Session is a terminal chat in one agent session over the HTTP API. Run
// shows the stored conversation, then sends each line read from In as a user
// message and shows the agent's live events on Out: its text as it arrives,
// each tool call and its final status, the usage of each turn, and an inline
// question for each approval, answered by the next line of In.
//
// Run waits for each turn to end before it reads the next message, so piped
// input gives deterministic output, and returns nil at the end of In once
// the last turn ended.
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

// Run chats until In ends (nil), ctx ends (ctx.Err()) or the API fails.
func (s *Session) Run(ctx context.Context) error {
	if s.Client == nil || s.ID == "" || s.In == nil || s.Out == nil {
		return errors.New("chat: Session needs a Client, an ID, In and Out")
	}
	s.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rctx, rcancel := context.WithTimeout(ctx, s.RequestTimeout)
	snap, token, err := s.Client.Snapshot(rctx, s.ID)
	rcancel()
	if err != nil {
		return err
	}
	if s.Agent != "" && snap.Agent != "" && snap.Agent != s.Agent {
		return fmt.Errorf("session %s is a session of agent %q, not %q", s.ID, snap.Agent, s.Agent)
	}
	c := newLoop(s, snap)
	c.showHistory(snap)
	events := make(chan streamMsg)
	go s.stream(ctx, token, events)
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
