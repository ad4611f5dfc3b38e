package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	dexproto "github.com/dex-agents/dex-agent-worker/proto"
)

// vectorCancelWait is how long a cancelled model call may take to end.
const vectorCancelWait = 5 * time.Second

// checkVectors sends each test vector's fresh requests (those any runner
// can answer) to the runner, renamed to the checked agent, and checks the
// contract's rules on the answers. A transcript's framework items are the
// runner's own, so the vector's transcript is built again with the runner:
// each user message through BuildUserMessage, and the model's part of each
// earlier turn through RunModelStep. The vectors' other calls need the
// tools, run state or tasks of the vector's own runner; every SDK replays
// those whole in its own tests.
func (c *pluginCheck) checkVectors(ctx context.Context, r pluginapi.Runner, caps pluginapi.Capabilities) {
	files, err := dexproto.VectorFiles()
	if err != nil || len(files) == 0 {
		c.fail("vectors", "", "the worker has no test vectors: %v", err)
		return
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	session := "plugin-check-vectors-" + randomHex(6)
	for _, n := range names {
		v, err := pluginapi.ParseVector(files[n])
		if err != nil {
			c.fail("vector", "", "%s: %v", n, err)
			continue
		}
		name := "vector " + v.Case
		var done, problems, notes []string
		skipped := 0
		for _, call := range v.Calls {
			if !call.Fresh {
				skipped++
				continue
			}
			if (call.Method == "SelectCompactionCutoff" || call.Method == "SummarizeContext") && !caps.Compaction {
				skipped++
				continue
			}
			p := c.vectorCall(ctx, r, call, session)
			var skip skipVector
			switch {
			case errors.As(p, &skip):
				skipped++
				notes = append(notes, call.Method+": "+skip.reason)
			case p != nil:
				problems = append(problems, call.Method+": "+p.Error())
			default:
				done = append(done, call.Method)
			}
		}
		switch {
		case len(problems) > 0:
			c.fail(name, "answer each request with exactly one valid outcome, and end a call when its context is cancelled", "%s", strings.Join(problems, "; "))
		case len(done) == 0 && len(notes) > 0:
			c.skip(name, "%s", strings.Join(notes, "; "))
		case len(done) == 0:
			c.skip(name, "its %d call(s) need the tools, run state or capabilities of the vector's own runner", skipped)
		case skipped > 0:
			c.pass(name, "%s answered by the contract's rules; %d call(s) need the vector's own runner", strings.Join(done, ", "), skipped)
		default:
			c.pass(name, "%s answered by the contract's rules", strings.Join(done, ", "))
		}
	}
}

// skipVector is a call plugin check could not set up for this runner,
// which is no fault of the runner.
type skipVector struct{ reason string }

func (s skipVector) Error() string { return s.reason }

// vectorCall sends one fresh request and returns what breaks the
// contract's rules in the answer (a skipVector when the call could not be
// set up), or nil.
func (c *pluginCheck) vectorCall(ctx context.Context, r pluginapi.Runner, call pluginapi.VectorCall, session string) error {
	p := c.vectorCallText(ctx, r, call, session)
	if p == "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(p, skipPrefix); ok {
		return skipVector{rest}
	}
	return errors.New(p)
}

// skipPrefix marks a vectorCallText result that is a skip.
const skipPrefix = "\x00skip:"

func (c *pluginCheck) vectorCallText(ctx context.Context, r pluginapi.Runner, call pluginapi.VectorCall, session string) string {
	agent := c.agent.Name
	cctx, cancel := context.WithTimeout(ctx, modelCheckTimeout)
	defer cancel()
	switch req := call.Request.(type) {
	case *pluginapi.BuildUserMessageRequest:
		req.Agent = agent
		resp, err := r.BuildUserMessage(cctx, req)
		if err != nil {
			return err.Error()
		}
		if resp.Message.Role != pluginapi.RoleUser {
			return fmt.Sprintf("the message's role is %q, not user", resp.Message.Role)
		}
	case *pluginapi.RunModelStepRequest:
		req.Turn.Agent, req.Turn.SessionID = agent, session
		msgs, p := c.ownTranscript(cctx, r, req.Turn, req.Turn.Messages)
		if p != "" {
			return p
		}
		req.Turn.Messages = msgs
		if call.CancelAfterFrames > 0 {
			return cancelledCall(cctx, r, req, call.CancelAfterFrames)
		}
		w := &checkEvents{}
		req.Events = w
		if _, err := r.RunModelStep(cctx, req); err != nil {
			return err.Error()
		}
		if w.invalid > 0 {
			return fmt.Sprintf("%d event(s) refused: %s", w.invalid, w.firstErr)
		}
	case *pluginapi.CompactionCutoffRequest:
		req.Turn.Agent, req.Turn.SessionID = agent, session
		msgs, p := c.ownTranscript(cctx, r, req.Turn, req.Turn.Messages)
		if p != "" {
			return p
		}
		req.Turn.Messages = msgs
		resp, err := r.(pluginapi.Compactor).SelectCompactionCutoff(cctx, req)
		if err != nil {
			return err.Error()
		}
		last := int64(0)
		if n := len(req.Turn.Messages); n > 0 {
			last = req.Turn.Messages[n-1].Sequence
		}
		if resp.ThroughSequence < 0 || resp.ThroughSequence > last {
			return fmt.Sprintf("through_sequence %d is outside the transcript (0 to %d)", resp.ThroughSequence, last)
		}
	case *pluginapi.SummarizeContextRequest:
		req.Turn.Agent, req.Turn.SessionID = agent, session
		msgs, p := c.ownTranscript(cctx, r, req.Turn, req.Messages)
		if p != "" {
			return p
		}
		req.Messages = msgs
		req.Events = &checkEvents{}
		resp, err := r.(pluginapi.Compactor).SummarizeContext(cctx, req)
		if err != nil {
			return err.Error()
		}
		if strings.TrimSpace(resp.Summary) == "" {
			return "the summary is empty"
		}
	default:
		return fmt.Sprintf("plugin check cannot send a %T", req)
	}
	return ""
}

// cancelledCall starts a model call, cancels it after its first frames (or
// a second without any), and checks that it ends within vectorCancelWait.
// A call that answered before the cancel passes: it had nothing to stop.
func cancelledCall(ctx context.Context, r pluginapi.Runner, req *pluginapi.RunModelStepRequest, frames int) string {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &countingEvents{after: frames, reached: make(chan struct{})}
	req.Events = w
	done := make(chan error, 1)
	go func() {
		_, err := r.RunModelStep(ctx, req)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return "before the cancel: " + err.Error()
		}
		return ""
	case <-w.reached:
	case <-time.After(time.Second):
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "canceled") && !strings.Contains(err.Error(), "cancelled") {
			return "after the cancel it failed with " + err.Error() + ", not a cancellation"
		}
		return ""
	case <-time.After(vectorCancelWait):
		return fmt.Sprintf("the call went on %s after the host cancelled it", vectorCancelWait)
	}
}

// countingEvents closes reached once the call wrote its first frames.
type countingEvents struct {
	checkEvents
	mu      sync.Mutex
	n       int
	after   int
	reached chan struct{}
}

func (w *countingEvents) seen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if w.n == w.after {
		close(w.reached)
	}
}

func (w *countingEvents) WriteTextDelta(s string) { w.checkEvents.WriteTextDelta(s); w.seen() }
func (w *countingEvents) WriteReasoningDelta(s string) {
	w.checkEvents.WriteReasoningDelta(s)
	w.seen()
}

// ownTranscript builds msgs again with the runner's own items: each user
// message through BuildUserMessage, and, for the vector's answer to it,
// the runner's answer from one RunModelStep. It returns what failed, or "".
func (c *pluginCheck) ownTranscript(ctx context.Context, r pluginapi.Runner, turn pluginapi.TurnContext, msgs []pluginapi.Message) ([]pluginapi.Message, string) {
	var out []pluginapi.Message
	add := func(m pluginapi.FrameworkMessage, turnID string) {
		out = append(out, pluginapi.Message{Sequence: int64(len(out) + 1), Role: m.Role, Text: m.Text, Item: m.Item,
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, TurnID: turnID, ToolStatus: m.ToolStatus})
	}
	turns, answered := 0, true
	for _, m := range msgs {
		if m.Role == pluginapi.RoleUser {
			um, err := r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: turn.Agent, Text: m.Text})
			if err != nil {
				return nil, "BuildUserMessage: " + err.Error()
			}
			turns++
			add(um.Message, fmt.Sprintf("turn-%d", turns))
			answered = false
			continue
		}
		if answered {
			continue // the runner already answered this turn
		}
		t := turn
		t.TurnID, t.Attempt, t.Messages, t.RunState, t.ToolCalls = fmt.Sprintf("turn-%d", turns), 1, out, "", nil
		resp, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: t, Events: &checkEvents{}})
		if err != nil {
			return nil, "RunModelStep for the transcript: " + err.Error()
		}
		answered = true
		if resp.TurnCompleted == nil {
			return nil, skipPrefix + "the runner's model asked for tools when plugin check built the vector's transcript, which needs plain answers"
		}
		for _, nm := range resp.TurnCompleted.NewMessages {
			add(nm, t.TurnID)
		}
	}
	return out, ""
}
