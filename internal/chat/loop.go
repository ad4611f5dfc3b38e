package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// loop is the state of a running chat. Only Run's goroutine touches it.
type loop struct {
	s   *Session
	out *lineWriter

	busy       bool            // a turn runs, or starts from a message sent
	eof        bool            // In ended
	lastSeq    int64           // the newest stored message shown
	finished   map[string]bool // ended turns: their events are ignored
	seen       map[string]map[string]bool
	turns      map[string]*turn
	calls      map[string]*call
	asked      map[string]bool   // interrupts queued as prompts
	callOfIn   map[string]string // interrupt ID → tool call ID
	prompts    []*prompt         // approvals to ask, in order; the first is asked
	reason     bool              // the first prompt waits for a rejection reason
	prompted   bool              // "you> " is shown
	snap       Snapshot          // the latest snapshot
	usage      Usage             // session usage at the latest report
	eventTotal Usage             // session usage of the latest usage_recorded
	plan       *Plan             // the plan shown last (its tasks may be left out)

	choice   *choice            // a message typed while a turn ran: queue it or steer with it?
	dropped  map[string]*prompt // prompts of a turn this chat stopped or steered, by interrupt ID
	ctrlC    chan struct{}      // Ctrl-C presses for the loop (watchCtrlC)
	stopTurn string             // the turn a cancel was sent for, until it ends
	stopping atomic.Bool        // stopTurn is set: the next Ctrl-C quits
}

// choice is a message typed while a turn ran, waiting for the user to say
// whether to queue it or to steer the turn with it.
type choice struct {
	text  string
	shown bool
}

type turn struct {
	steps map[string]*stepText
	order []string
	usage Usage
}

type stepText struct {
	attempt int
	text    strings.Builder
}

type call struct {
	name, args string
	shown      bool   // "→ name args" written
	status     string // final status written
	rejection  string
	cancelled  string // the cancellation reason of a call a steer or a cancel stopped
}

type prompt struct {
	interruptID, toolCallID, toolName, args, turnID string
	// holder is the sub-agent session that raised it ("": this session).
	holder string
	// digest is the approval's, sent back when it is answered.
	digest string
	shown  bool
	// A question's (kind "question"): asked, not approved.
	question bool
	text     string
	choices  []string
	free     bool
}

// what names the prompt in notes.
func (p *prompt) what() string {
	if p.question {
		return fmt.Sprintf("the question %q", p.text)
	}
	return "the approval of " + p.toolName
}

// from names the sub-agent that asks, for the prompt's line.
func (p *prompt) from() string {
	if p.holder == "" {
		return ""
	}
	return "[sub-agent " + p.holder + "] "
}

func newLoop(s *Session, snap Snapshot) *loop {
	c := &loop{
		s: s, out: &lineWriter{w: s.Out, atStart: true},
		finished: map[string]bool{}, seen: map[string]map[string]bool{}, turns: map[string]*turn{},
		calls: map[string]*call{}, asked: map[string]bool{}, callOfIn: map[string]string{},
		dropped: map[string]*prompt{}, ctrlC: make(chan struct{}, 1),
		snap: snap, usage: snap.Usage, busy: !idle(snap),
	}
	active := activeTurnID(snap)
	for _, m := range snap.Messages {
		if m.TurnID != "" && m.TurnID != active {
			c.finished[m.TurnID] = true
		}
	}
	if active != "" {
		c.turn(active)
	}
	return c
}

// showHistory writes the stored conversation briefly: the newest messages,
// long texts cut. The active turn's answer is left to its events, which the
// snapshot's token replays.
func (c *loop) showHistory(snap Snapshot) {
	const keep = 20
	active := activeTurnID(snap)
	var shown []Message
	for _, m := range snap.Messages {
		if active != "" && m.TurnID == active && m.Role != RoleUser {
			continue
		}
		c.lastSeq = max(c.lastSeq, m.Sequence)
		if m.Role == RoleAssistant && strings.TrimSpace(m.Text) == "" {
			continue
		}
		if m.Role == RoleTool && m.ToolName == writeTodos && m.ToolStatus == ToolCallSucceeded {
			continue // the plan is shown after the history
		}
		shown = append(shown, m)
	}
	if len(shown) > keep {
		c.out.printf("(%d earlier messages)\n", len(shown)-keep)
		shown = shown[len(shown)-keep:]
	}
	for _, m := range shown {
		switch m.Role {
		case RoleUser:
			c.out.printf("you> %s\n", cut(m.Text, 300))
		case RoleTool:
			c.out.printf("← %s: %s\n", m.ToolName, cut(oneLine(m.Text), 100))
		default:
			c.out.printf("%s\n", cut(strings.TrimSpace(m.Text), 600))
		}
	}
	if active != "" {
		c.out.printf("(turn %s is running)\n", active)
	}
	if snap.Plan != nil && snap.Plan.Status != PlanCleared {
		c.showPlan(snap.Plan)
	}
	if len(shown) > 0 || active != "" || c.plan != nil {
		c.out.printf("\n")
	}
}

func (c *loop) run(ctx context.Context, lines <-chan line, events <-chan streamMsg) error {
	if c.s.Interactive {
		fmt.Fprintln(c.s.Notes, "(type a message and press Enter; Ctrl-C stops a running turn; Ctrl-D or Ctrl-C ends the chat; /help lists the commands)")
	}
	for {
		if c.eof && len(c.prompts) > 0 {
			c.out.endLine()
			p := c.prompts[0]
			if p.question {
				return fmt.Errorf("%w: %s asks %q (interrupt %s)", ErrPendingApproval, p.toolName, p.text, p.interruptID)
			}
			return fmt.Errorf("%w: %s %s (interrupt %s)", ErrPendingApproval, p.toolName, p.args, p.interruptID)
		}
		if c.eof && !c.busy {
			c.out.endLine()
			return nil
		}
		// Piped input waits for the turn to end, but for its prompts; a
		// terminal's lines are read while a turn runs too.
		var lineCh <-chan line
		if !c.eof && (len(c.prompts) > 0 || !c.busy || c.s.Interactive || c.choice != nil) {
			lineCh = lines
			c.showPrompt()
		}
		var poll <-chan time.Time
		var timer *time.Timer
		if c.busy && len(c.prompts) == 0 {
			timer = time.NewTimer(c.s.PollInterval)
			poll = timer.C
		}
		err := c.step(ctx, lineCh, events, poll)
		if timer != nil {
			timer.Stop()
		}
		if err != nil {
			return err
		}
	}
}

// step waits for one input, an event, a line or the poll timer, and
// applies it. lineCh is nil when no line is wanted.
func (c *loop) step(ctx context.Context, lineCh <-chan line, events <-chan streamMsg, poll <-chan time.Time) error {
	select {
	case <-ctx.Done():
		c.out.endLine()
		return ctx.Err()
	case <-c.ctrlC:
		return c.interrupted(ctx)
	case m := <-events:
		switch {
		case m.err != nil:
			c.out.endLine()
			return m.err
		case m.note != "":
			c.note(m.note)
		case m.snap != nil:
			c.reconcile(*m.snap, false)
		case m.event != nil:
			c.event(ctx, *m.event)
		}
	case l, ok := <-lineCh:
		switch {
		case !ok:
			c.eof = true
		case l.err != nil:
			return fmt.Errorf("read input: %w", l.err)
		default:
			return c.line(ctx, l.text)
		}
	case <-poll:
		rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
		snap, _, err := c.s.Client.Snapshot(rctx, c.s.ID)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			c.note(fmt.Sprintf("(reload the snapshot: %v)", err))
		default:
			c.reconcile(snap, true)
		}
	}
	return nil
}

func (c *loop) note(s string) {
	c.out.endLine()
	fmt.Fprintln(c.s.Notes, s)
	if c.s.Interactive {
		// On a terminal the note broke the prompt's line: show it again.
		c.prompted = false
		if c.choice != nil {
			c.choice.shown = false
		} else if len(c.prompts) > 0 && !c.reason {
			c.prompts[0].shown = false
		}
	}
}

func (c *loop) showPrompt() {
	if c.choice != nil {
		if !c.choice.shown {
			c.choice.shown = true
			c.out.endLine()
			c.out.printf("A turn is running: [q]ueue it or [s]teer the turn with it? (q/s) ")
		}
		return
	}
	if len(c.prompts) > 0 {
		p := c.prompts[0]
		if p.shown {
			return
		}
		p.shown = true
		c.out.endLine()
		if p.question {
			c.out.printf("? %s%s\n", p.from(), p.text)
			for i, ch := range p.choices {
				c.out.printf("  %d. %s\n", i+1, ch)
			}
			switch {
			case len(p.choices) == 0:
				c.out.printf("answer (- to decline)> ")
			case p.free:
				c.out.printf("answer (a number or your own words, - to decline)> ")
			default:
				c.out.printf("answer (1-%d, - to decline)> ", len(p.choices))
			}
			return
		}
		args := p.args
		if args != "" {
			args = " " + args
		}
		c.out.printf("%sApprove %s%s? [y/N/r=reject with reason] ", p.from(), p.toolName, args)
		return
	}
	if c.s.Interactive && !c.prompted && !c.busy {
		c.prompted = true
		c.out.endLine()
		c.out.printf("you> ")
	}
}

// line handles one line of In: the answer to the asked approval or
// question, the choice for a message typed while a turn ran, a command, or
// a message.
func (c *loop) line(ctx context.Context, text string) error {
	if !c.s.Interactive {
		if len(c.prompts) == 0 && c.choice == nil {
			c.out.printf("you> ")
		}
		c.out.printf("%s\n", text)
	} else {
		c.out.atStart = true // the terminal echoed the line and its newline
	}
	if c.choice != nil {
		return c.answerChoice(ctx, text)
	}
	cmd, arg, _ := strings.Cut(strings.TrimSpace(text), " ")
	arg = strings.TrimSpace(arg)
	if !c.reason {
		// Turn control works at a prompt too: the prompt's turn ends.
		switch cmd {
		case "/stop":
			c.prompted = false
			return c.stop(ctx)
		case "/steer":
			c.prompted = false
			return c.steer(ctx, arg)
		case "/help":
			c.note(helpText)
			return nil
		}
	}
	if len(c.prompts) > 0 {
		return c.answer(ctx, text)
	}
	c.prompted = false
	if strings.TrimSpace(text) == "" {
		return nil
	}
	switch cmd {
	case "/model":
		return c.model(ctx, strings.TrimSpace(arg))
	case "/plan":
		return c.sendPlanning(ctx, strings.TrimSpace(arg))
	case "/execute":
		return c.executePlan(ctx)
	}
	if c.busy {
		// Only a terminal's line comes while a turn runs: ask what it is for.
		c.choice = &choice{text: text}
		return nil
	}
	_, err := c.send(ctx, "the message", "(the session did not accept the message)", func(ctx context.Context) (bool, error) {
		return c.s.Client.SendMessage(ctx, c.s.ID, text)
	})
	return err
}

func (c *loop) answer(ctx context.Context, text string) error {
	p := c.prompts[0]
	if p.question {
		return c.answerQuestion(ctx, p, text)
	}
	res := Resolution{Digest: p.digest, SessionID: p.holder}
	if c.reason {
		c.reason = false
		res.RejectionMessage = strings.TrimSpace(text)
	} else {
		t := strings.TrimSpace(text)
		word, rest, _ := strings.Cut(t, " ")
		switch strings.ToLower(word) {
		case "y", "yes":
			res.Approved = true
		case "r", "reject":
			res.RejectionMessage = strings.TrimSpace(rest)
			if res.RejectionMessage == "" {
				c.reason = true
				c.out.printf("reason: ")
				return nil
			}
		}
	}
	rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	ok, why, err := c.s.Client.ResolveInterruptWithReason(rctx, c.s.ID, p.interruptID, res)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && c.s.Interactive:
		c.note(fmt.Sprintf("(not answered: %v)", err))
		p.shown = false // ask again
		return nil
	case err != nil:
		return fmt.Errorf("answer the approval of %s: %w", p.toolName, err)
	case !ok && why != "":
		c.note(fmt.Sprintf("(the approval of %s was not taken: %s)", p.toolName, why))
	case !ok:
		c.note(fmt.Sprintf("(the approval of %s is not pending any more)", p.toolName))
	}
	c.prompts = c.prompts[1:]
	if !res.Approved {
		c.callOf(p.toolCallID).rejection = res.RejectionMessage
	}
	return nil
}

// answerQuestion answers the asked question with a line: a choice's
// number, other text, or "-" to decline. An answer the session does not
// take (blank, or not a choice) asks again while the question waits.
func (c *loop) answerQuestion(ctx context.Context, p *prompt, text string) error {
	t := strings.TrimSpace(text)
	if t == "" {
		p.shown = false
		return nil
	}
	decline := t == "-"
	if n, err := strconv.Atoi(t); err == nil && n >= 1 && n <= len(p.choices) {
		t = p.choices[n-1]
	}
	rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	ok, why, err := c.s.Client.AnswerQuestionWithReason(rctx, c.s.ID, p.interruptID, t, decline)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && c.s.Interactive:
		c.note(fmt.Sprintf("(not answered: %v)", err))
		p.shown = false
		return nil
	case err != nil:
		return fmt.Errorf("answer %s: %w", p.what(), err)
	case !ok && c.reload(ctx) && pendingIn(c.snap, p.interruptID):
		if len(p.choices) > 0 && !p.free {
			c.note(fmt.Sprintf("(not taken: answer with a number from 1 to %d)", len(p.choices)))
		} else {
			c.note("(not taken: the answer is too long or not text)")
		}
		p.shown = false
		return nil
	case !ok && why != "":
		c.note(fmt.Sprintf("(%s was not taken: %s)", p.what(), why))
	case !ok:
		c.note(fmt.Sprintf("(%s is not pending any more)", p.what()))
	}
	c.prompts = c.prompts[1:]
	return nil
}

func pendingIn(s Snapshot, interruptID string) bool {
	for _, in := range s.PendingInterrupts {
		if in.InterruptID == interruptID {
			return true
		}
	}
	return false
}

// event applies one live event.
func (c *loop) event(ctx context.Context, d Delivered) {
	e := d.Event
	if e.TurnID != "" && c.finished[e.TurnID] {
		return
	}
	if d.ID != "" {
		set := c.seen[e.TurnID]
		if set == nil {
			set = map[string]bool{}
			c.seen[e.TurnID] = set
		}
		if set[d.ID] {
			return
		}
		set[d.ID] = true
	}
	switch e.Type {
	case wire.EventTurnStarted:
		c.busy = true
		c.turn(e.TurnID)
	case wire.EventTextDelta:
		var p wire.TextPayload
		if e.Payload.Decode(&p) == nil {
			c.text(e, p.Text)
		}
	case wire.EventToolCallDeferred:
		var p wire.ToolCallDeferredPayload
		if e.Payload.Decode(&p) == nil {
			c.toolDeferred(ctx, p)
		}
	case wire.EventToolCallFinished:
		var p wire.ToolCallFinishedPayload
		if e.Payload.Decode(&p) == nil {
			c.toolFinished(ctx, p)
		}
	case wire.EventInterruptRaised:
		var p wire.InterruptRaisedPayload
		if e.Payload.Decode(&p) == nil {
			c.interruptRaised(ctx, e.TurnID, p)
		}
	case wire.EventInterruptResolved:
		var p wire.InterruptResolvedPayload
		if e.Payload.Decode(&p) == nil {
			c.interruptResolved(p)
		}
	case wire.EventTurnRecovering:
		var p wire.TurnRecoveringPayload
		if e.Payload.Decode(&p) == nil && p.Step != "" {
			what := "the model call"
			if p.ToolName != "" {
				what = p.ToolName
			}
			c.note(fmt.Sprintf("(retrying %s: attempt %d)", what, p.Attempt))
		}
	case wire.EventInterruptExpiring:
		var p wire.InterruptExpiringPayload
		if e.Payload.Decode(&p) == nil && p.InterruptID != "" {
			what := "the approval of " + p.ToolName
			if p.Kind == InterruptKindQuestion {
				what = "the question of " + p.ToolName
			}
			c.note(fmt.Sprintf("(%s expires in %ds)", what, p.SecondsLeft))
		}
	case wire.EventUsageRecorded:
		var p wire.UsageRecordedPayload
		if e.Payload.Decode(&p) == nil {
			t := c.turn(e.TurnID)
			t.usage = t.usage.Add(Usage(p.Recorded))
			if p.Session.ModelCalls > c.eventTotal.ModelCalls {
				c.eventTotal = Usage(p.Session)
			}
		}
	case wire.EventPlanUpdated:
		var p wire.PlanUpdatedPayload
		if e.Payload.Decode(&p) == nil {
			c.planEvent(ctx, p)
		}
	case wire.EventPlanExecutionStarted:
		var p wire.PlanExecutionStartedPayload
		if e.Payload.Decode(&p) == nil {
			c.note(fmt.Sprintf("(executing plan revision %d)", p.Revision))
		}
	case wire.EventCompactionStarted:
		c.note("(compacting the conversation: the model gets a summary of the older messages)")
	case wire.EventCompactionFinished:
		var p wire.CompactionFinishedPayload
		if e.Payload.Decode(&p) == nil {
			c.note(fmt.Sprintf("(summary %d covers messages 1 to %d)", p.Generation, p.ThroughSequence))
		}
	case wire.EventTurnSteered:
		var p wire.TurnSteeredPayload
		_ = e.Payload.Decode(&p)
		if p.SteeredMessageCount > 1 {
			c.note(fmt.Sprintf("(the turn was steered: the next turn starts with the %d steered messages)", p.SteeredMessageCount))
		} else {
			c.note("(the turn was steered: the next turn starts with the steered message)")
		}
		c.endTurn(ctx, e.TurnID)
	case wire.EventTurnCancelled:
		c.note("(the turn was stopped)")
		c.endTurn(ctx, e.TurnID)
	case wire.EventTurnCompleted, wire.EventTurnFailed:
		c.out.endLine()
		if e.Type == wire.EventTurnFailed {
			var p wire.TurnFailedPayload
			_ = e.Payload.Decode(&p)
			c.out.printf("✗ turn failed: %s\n", p.Error)
		}
		c.endTurn(ctx, e.TurnID)
	}
}

func (c *loop) turn(id string) *turn {
	t := c.turns[id]
	if t == nil {
		t = &turn{steps: map[string]*stepText{}}
		c.turns[id] = t
	}
	return t
}

func (c *loop) callOf(id string) *call {
	k := c.calls[id]
	if k == nil {
		k = &call{}
		c.calls[id] = k
	}
	return k
}

// text applies the attempt rule: within one step execution only the highest
// attempt's text counts. Text already written cannot be taken back, so a
// higher attempt is marked as a retry and lower attempts are dropped.
func (c *loop) text(e Event, text string) {
	t := c.turn(e.TurnID)
	st := t.steps[e.StepExecutionID]
	if st == nil {
		st = &stepText{attempt: e.Attempt}
		t.steps[e.StepExecutionID] = st
		t.order = append(t.order, e.StepExecutionID)
		c.out.endLine()
	}
	switch {
	case e.Attempt < st.attempt:
		return
	case e.Attempt > st.attempt:
		if st.text.Len() > 0 {
			c.out.endLine()
			c.out.printf("(retrying…)\n")
		}
		st.attempt = e.Attempt
		st.text.Reset()
	}
	st.text.WriteString(text)
	c.out.printf("%s", text)
}

// shownLive reports whether a stored answer was written from its events.
func (c *loop) shownLive(turnID, text string) bool {
	t := c.turns[turnID]
	if t == nil {
		return false
	}
	var live strings.Builder
	for _, id := range t.order {
		live.WriteString(t.steps[id].text.String())
		live.WriteByte('\n')
	}
	return strings.Contains(live.String(), strings.TrimSpace(text))
}

func (c *loop) toolDeferred(ctx context.Context, p wire.ToolCallDeferredPayload) {
	k := c.callOf(p.ToolCallID)
	if k.shown {
		return
	}
	k.shown = true
	k.name = p.ToolName
	switch p.ToolName {
	case "ask_user":
		return // its question is asked as a prompt
	case writeTodos:
		return // the plan is shown as a checklist (plan_updated)
	}
	if tc, ok := c.toolCall(ctx, p.ToolCallID); ok {
		k.args = compact(tc.Arguments)
	}
	c.out.endLine()
	if k.args != "" {
		c.out.printf("→ %s %s\n", k.name, k.args)
	} else {
		c.out.printf("→ %s\n", k.name)
	}
}

func (c *loop) toolFinished(ctx context.Context, p wire.ToolCallFinishedPayload) {
	k := c.callOf(p.ToolCallID)
	if k.status == p.Status {
		return
	}
	k.status = p.Status
	if k.name == "" {
		k.name = p.ToolName
	}
	if k.name == writeTodos && p.Status == string(ToolCallSucceeded) {
		return // the plan is shown as a checklist (plan_updated)
	}
	c.out.endLine()
	switch wire.ToolCallStatus(p.Status) {
	case ToolCallSucceeded:
		c.out.printf("✓ %s succeeded\n", k.name)
	case ToolCallRejected:
		if k.cancelled == "" {
			if tc, ok := c.toolCall(ctx, p.ToolCallID); ok {
				k.cancelled = tc.CancellationReason
			}
		}
		switch {
		case k.cancelled != "":
			c.out.printf("✗ %s cancelled: %s\n", k.name, controlReason(k.cancelled))
		case k.rejection != "":
			c.out.printf("✗ %s rejected: %s\n", k.name, k.rejection)
		default:
			c.out.printf("✗ %s rejected\n", k.name)
		}
	default:
		detail := ""
		if tc, ok := c.toolCall(ctx, p.ToolCallID); ok {
			detail = tc.Error
			if detail == "" {
				detail = tc.Output
			}
		}
		if detail != "" {
			c.out.printf("✗ %s %s: %s\n", k.name, p.Status, cut(oneLine(detail), 200))
		} else {
			c.out.printf("✗ %s %s\n", k.name, p.Status)
		}
	}
}

// toolCall finds a tool call of the active turn in the latest snapshot,
// reloading it when the call is missing or has no final status yet.
func (c *loop) toolCall(ctx context.Context, id string) (ToolCall, bool) {
	find := func() (ToolCall, bool) {
		for _, tc := range c.snap.ToolCalls {
			if tc.ToolCallID == id {
				return tc, true
			}
		}
		return ToolCall{}, false
	}
	k := c.calls[id]
	if tc, ok := find(); ok && (k == nil || k.status == "" || string(tc.Status) == k.status) {
		return tc, true
	}
	c.reload(ctx)
	return find()
}

func (c *loop) reload(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	defer cancel()
	snap, _, err := c.s.Client.Snapshot(rctx, c.s.ID)
	if err != nil {
		return false
	}
	c.snap = snap
	return true
}

func (c *loop) interruptRaised(ctx context.Context, turnID string, p wire.InterruptRaisedPayload) {
	if c.asked[p.InterruptID] {
		return
	}
	c.asked[p.InterruptID] = true
	c.callOfIn[p.InterruptID] = p.ToolCallID
	pr := &prompt{interruptID: p.InterruptID, toolCallID: p.ToolCallID, toolName: p.ToolName, turnID: turnID, digest: p.Digest,
		question: p.Kind == InterruptKindQuestion, text: p.Question, choices: p.Choices, free: p.AllowsFreeText}
	if k := c.calls[p.ToolCallID]; k != nil && k.args != "" {
		pr.args = k.args
	} else if tc, ok := c.toolCall(ctx, p.ToolCallID); ok {
		pr.args = compact(tc.Arguments)
	}
	c.prompts = append(c.prompts, pr)
}

func (c *loop) interruptResolved(p wire.InterruptResolvedPayload) {
	c.asked[p.InterruptID] = true
	if p.CancellationReason != "" {
		c.interruptCancelled(p)
		return
	}
	for i, pr := range c.prompts {
		if pr.interruptID != p.InterruptID {
			continue
		}
		how := "rejected"
		switch {
		case p.CancellationReason != "":
			how = strings.ReplaceAll(p.CancellationReason, "_", " ")
		case pr.question && p.Answered:
			how = "answered"
		case pr.question && p.RejectionMessage != "":
			how = p.RejectionMessage
		case pr.question:
			how = "declined"
		case p.Approved:
			how = "approved"
		}
		if pr.shown {
			c.out.endLine()
			c.out.printf("\n")
		}
		c.note(fmt.Sprintf("(%s ended elsewhere: %s)", pr.what(), how))
		c.prompts = append(c.prompts[:i], c.prompts[i+1:]...)
		if i == 0 {
			c.reason = false
		}
		break
	}
	if id, ok := c.callOfIn[p.InterruptID]; ok && !p.Approved && p.RejectionMessage != "" {
		if k := c.callOf(id); k.rejection == "" {
			k.rejection = p.RejectionMessage
		}
	}
}

// endTurn ends a turn whose turn_completed or turn_failed arrived: it
// reloads the snapshot once the session moved on, and reconciles.
func (c *loop) endTurn(ctx context.Context, turnID string) {
	wait := 10 * time.Millisecond
	deadline := time.Now().Add(3 * time.Second)
	for {
		if c.reload(ctx) && (turnID == "" || activeTurnID(c.snap) != turnID) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(wait*2, 200*time.Millisecond)
	}
	c.finishTurns(c.snap, turnID)
}

// reconcile applies a snapshot loaded after a rejected token or a quiet
// spell: a plan that changed is shown, turns that ended meanwhile are
// finished from their stored messages,
// and, with prompts, pending approvals not asked yet are queued.
func (c *loop) reconcile(snap Snapshot, prompts bool) {
	c.snap = snap
	active := activeTurnID(snap)
	c.showPlan(snap.Plan)
	if prompts {
		for _, in := range snap.PendingInterrupts {
			if in.SessionID != "" && in.SessionID != c.s.ID {
				// A sub-agent's: its events are not in this stream.
				key := in.SessionID + "/" + in.InterruptID
				if !c.asked[key] {
					c.asked[key] = true
					c.prompts = append(c.prompts, &prompt{interruptID: in.InterruptID, toolCallID: in.ToolCallID, digest: in.Digest, holder: in.SessionID,
						toolName: in.ToolName, args: compact(in.Arguments), turnID: active,
						question: in.Kind == InterruptKindQuestion, text: in.Question, choices: in.Choices, free: in.AllowsFreeText})
				}
				continue
			}
			if c.asked[in.InterruptID] {
				continue
			}
			c.asked[in.InterruptID] = true
			c.callOfIn[in.InterruptID] = in.ToolCallID
			c.prompts = append(c.prompts, &prompt{interruptID: in.InterruptID, toolCallID: in.ToolCallID, digest: in.Digest,
				toolName: in.ToolName, args: compact(in.Arguments), turnID: active,
				question: in.Kind == InterruptKindQuestion, text: in.Question, choices: in.Choices, free: in.AllowsFreeText})
		}
	}
	var ended []string
	for id := range c.turns {
		if id != "" && id != active {
			ended = append(ended, id)
		}
	}
	if len(ended) > 0 || (c.busy && idle(snap)) {
		c.finishTurns(snap, ended...)
	}
}

// finishTurns writes what the events of the ended turns missed (their stored
// answers not written live), then the usage, and forgets the turns.
func (c *loop) finishTurns(snap Snapshot, ended ...string) {
	active := activeTurnID(snap)
	endedSet := map[string]bool{}
	for _, id := range ended {
		endedSet[id] = true
	}
	for _, m := range snap.Messages {
		if m.Sequence <= c.lastSeq {
			continue
		}
		if m.TurnID != "" && m.TurnID == active && !endedSet[m.TurnID] {
			break
		}
		c.lastSeq = m.Sequence
		if m.TurnID != "" {
			endedSet[m.TurnID] = true
		}
		switch m.Role {
		case RoleAssistant:
			if strings.TrimSpace(m.Text) != "" && !c.shownLive(m.TurnID, m.Text) {
				c.out.endLine()
				c.out.printf("%s\n", strings.TrimSpace(m.Text))
			}
		case RoleTool:
			if k := c.calls[m.ToolCallID]; k == nil || k.status == "" {
				c.out.endLine()
				c.out.printf("← %s: %s\n", m.ToolName, cut(oneLine(m.Text), 100))
			}
		}
	}
	// The turn's usage is what its usage_recorded events add up to, or the
	// growth of the snapshot's usage when events were lost; the session's is
	// the newer of the snapshot's and the latest event's.
	var fromEvents Usage
	for id := range endedSet {
		if t := c.turns[id]; t != nil {
			fromEvents = fromEvents.Add(t.usage)
		}
		c.finished[id] = true
		delete(c.turns, id)
		delete(c.seen, id)
	}
	turnUsage := subUsage(snap.Usage, c.usage)
	// When the next turn already runs (a steered or queued message), the
	// snapshot's growth holds its usage too: the events are the measure.
	nextRuns := active != "" && !endedSet[active]
	if fromEvents.ModelCalls > turnUsage.ModelCalls || nextRuns && fromEvents.ModelCalls > 0 {
		turnUsage = fromEvents
	}
	total := snap.Usage
	if c.eventTotal.ModelCalls > total.ModelCalls {
		total = c.eventTotal
	}
	c.usage = total
	c.out.endLine()
	c.out.printf("· usage: %s; session total: %s\n", describeUsage(turnUsage, true), describeUsage(total, false))
	kept := c.prompts[:0]
	for _, p := range c.prompts {
		if !endedSet[p.turnID] {
			kept = append(kept, p)
		}
	}
	c.prompts = kept
	for id, p := range c.dropped {
		if endedSet[p.turnID] {
			delete(c.dropped, id)
		}
	}
	c.busy = !idle(snap) && !endedSet[active]
	if c.stopTurn != "" && (endedSet[c.stopTurn] || !c.busy) {
		c.stopTurn = ""
		c.stopping.Store(false)
	}
	if !c.busy {
		c.out.printf("\n")
	}
}

func describeUsage(u Usage, detail bool) string {
	calls := "model calls"
	if u.ModelCalls == 1 {
		calls = "model call"
	}
	s := fmt.Sprintf("%d %s, %d tokens", u.ModelCalls, calls, u.TotalTokens)
	if detail {
		s += fmt.Sprintf(" (%d in, %d out)", u.InputTokens, u.OutputTokens)
	}
	return s
}

// lineWriter writes to w and knows whether the cursor is at a line start.
type lineWriter struct {
	w       io.Writer
	atStart bool
}

func (l *lineWriter) printf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if s == "" {
		return
	}
	_, _ = io.WriteString(l.w, s)
	l.atStart = strings.HasSuffix(s, "\n")
}

func (l *lineWriter) endLine() {
	if !l.atStart {
		l.printf("\n")
	}
}

func compact(args string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(args)) == nil {
		return b.String()
	}
	return args
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// ModelSettingKey is the session setting /model sets: the key Stepwise
// agents read by default (runner_config settings_model_key).
const ModelSettingKey = "model"

// model handles "/model [NAME|-]": it shows the model setting, sets it for
// the next turns, or (with -) removes it, keeping the other settings.
func (c *loop) model(ctx context.Context, name string) error {
	rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	defer cancel()
	snap, _, err := c.s.Client.Snapshot(rctx, c.s.ID)
	if err != nil {
		c.note(fmt.Sprintf("(/model: %v)", err))
		return nil
	}
	settings := map[string]any{}
	if len(snap.SessionSettings) > 0 {
		if err := json.Unmarshal(snap.SessionSettings, &settings); err != nil {
			c.note(fmt.Sprintf("(/model: the session settings are not an object: %v)", err))
			return nil
		}
	}
	switch name {
	case "":
		if m, ok := settings[ModelSettingKey]; ok {
			c.note(fmt.Sprintf("(model: %v; /model NAME switches, /model - returns to the agent's default)", m))
		} else {
			c.note("(model: the agent's default; /model NAME switches to one the agent allows)")
		}
		return nil
	case "-":
		delete(settings, ModelSettingKey)
	default:
		settings[ModelSettingKey] = name
	}
	raw, err := json.Marshal(settings)
	if err != nil {
		return err
	}
	ok, err := c.s.Client.UpdateSettings(rctx, c.s.ID, raw)
	switch {
	case err != nil:
		c.note(fmt.Sprintf("(/model: %v)", err))
	case !ok:
		c.note("(/model: the session did not take the settings)")
	case name == "-":
		c.note("(the next turn uses the agent's default model)")
	default:
		c.note(fmt.Sprintf("(the next turn uses model %s)", name))
	}
	return nil
}
