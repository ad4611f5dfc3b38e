package session

import (
	"fmt"
	"strings"
	"time"
)

// render writes a command as one readable line, for table tests and the
// golden interaction scripts.
func render(c Command) string {
	switch c := c.(type) {
	case BuildUserMessage:
		out := fmt.Sprintf("build_user_message %s %q", c.Input.TurnID, c.Input.Text)
		if c.Input.TextRef != "" {
			out += " ref=" + c.Input.TextRef
		}
		return out + renderStore(c.Input.Store)
	case RunModel:
		var seqs []string
		for _, m := range c.Input.Messages {
			seqs = append(seqs, fmt.Sprint(m.Sequence))
		}
		var calls []string
		for _, tc := range c.Input.ToolCalls {
			calls = append(calls, tc.ToolCallID+":"+string(tc.Status))
		}
		out := fmt.Sprintf("run_model %s messages=[%s]", c.Input.TurnID, strings.Join(seqs, " "))
		if tr := c.Input.Transcript; tr != nil {
			out = fmt.Sprintf("run_model %s transcript=%d..%d window_from=%d", c.Input.TurnID, tr.From, tr.Last, tr.WindowFirst)
		}
		if c.Input.RunState != "" {
			out += fmt.Sprintf(" run_state=%s", c.Input.RunState)
		}
		if len(calls) > 0 {
			out += " tool_calls=[" + strings.Join(calls, " ") + "]"
		}
		if c.Input.Settings != "" {
			out += " settings=" + c.Input.Settings
		}
		if sm := c.Input.Summary; sm != nil {
			out += fmt.Sprintf(" summary=%d:%d..%d", sm.Generation, sm.FirstSequence, sm.LastSequence)
		}
		// The spend counters show where spend is priced or a token set
		// (the usage alone is in the state line).
		if len(c.Input.HostTools) > 0 {
			var names []string
			for _, d := range c.Input.HostTools {
				names = append(names, d.Name)
			}
			out += " host_tools=[" + strings.Join(names, " ") + "]"
		}
		if sp := c.Input.Spend; sp.APIToken != "" || sp.Session.CostMicros != 0 {
			out += fmt.Sprintf(" spend=[token=%q session=%+v turn=%+v]", sp.APIToken, sp.Session, sp.Turn)
		}
		return out + fmt.Sprintf(" attempts=%d", c.Limits.MaximumAttempts) + renderStore(c.Input.Store)
	case CompactContext:
		tr := c.Input.Turn.Transcript
		out := fmt.Sprintf("compact_context %s through=%d transcript=%d..%d attempts=%d", c.Input.Turn.TurnID, c.Input.Through, tr.From, tr.Last, c.Limits.MaximumAttempts)
		if sm := c.Input.Turn.Summary; sm != nil {
			out += fmt.Sprintf(" summary=%d:%d..%d", sm.Generation, sm.FirstSequence, sm.LastSequence)
		}
		return out
	case FailSession:
		return fmt.Sprintf("fail_session %q", c.Reason)
	case RunTool:
		line := fmt.Sprintf("%s %s effect=%s attempts=%d key=%s", c.Step, c.ActivityID, c.Input.ToolCall.Effect, c.Limits.MaximumAttempts, c.Input.IdempotencyKey)
		if tc := c.Input.ToolCall; len(tc.InputAnswers) > 0 || tc.InputContinuation != "" {
			line += fmt.Sprintf(" input_answers=%q input_continuation=%q", tc.InputAnswers, tc.InputContinuation)
		}
		if c.Input.HostSource != "" {
			line += " host_source=" + c.Input.HostSource
		}
		return line
	case StartTimer:
		return fmt.Sprintf("start_timer %s %s", c.InterruptID, time.Duration(c.DelayMs)*time.Millisecond)
	case StartTaskTimer:
		return fmt.Sprintf("start_task_timer %s %s", c.ToolCallID, time.Duration(c.DelayMs)*time.Millisecond)
	case RunPoll:
		line := fmt.Sprintf("PollToolTask %s task=%s attempts=%d continuation=%q", c.ActivityID, c.Input.ToolCall.TaskID, c.Limits.MaximumAttempts, c.Input.ToolCall.InputContinuation)
		if a := c.Input.ToolCall.TaskAnswerPending; a != nil {
			line += fmt.Sprintf(" pending_answer=%s:%q", a.Resolution, a.Answer)
		}
		return line
	case StartWaitTimer:
		return fmt.Sprintf("start_wait_timer %s %s", c.ToolCallID, time.Duration(c.DelayMs)*time.Millisecond)
	case CancelTimer:
		return "cancel_timer " + c.InterruptID
	case CancelStep:
		return "cancel_step " + c.Key
	case CancelTask:
		return fmt.Sprintf("CancelToolTask %s task=%s attempts=%d timeout=%s", c.ActivityID, c.Input.ToolCall.TaskID, c.Limits.MaximumAttempts, c.Limits.StartToClose)
	case RecordTurnFailure:
		out := "record_turn_failure " + c.Input.Turn.TurnID
		if c.Step != "" {
			out = "apply_turn_control " + c.Input.Turn.TurnID
			if tc := c.Input.Turn.ToolCalls; len(tc) > 0 {
				var calls []string
				for _, r := range tc {
					calls = append(calls, r.ToolCallID+":"+string(r.Status))
				}
				out += fmt.Sprintf(" tool_calls=%v", calls)
			}
		}
		if c.Input.Note != "" {
			out += fmt.Sprintf(" note=%q", c.Input.Note)
		}
		if c.Input.UserText != "" {
			out += fmt.Sprintf(" user_text=%q", c.Input.UserText)
		}
		return out + renderStore(c.Input.Turn.Store)
	case Emit:
		e := c.Event
		out := fmt.Sprintf("emit %s turn=%s attempt=%d", e.Type, e.TurnID, e.Attempt)
		if e.Step != "" {
			out += " step=" + e.Step
		}
		return out + " " + string(e.Payload)
	}
	return fmt.Sprintf("unknown command %T", c)
}

func renderAll(cmds []Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, render(c))
	}
	return out
}

// renderStore writes a storing Step's store work.
func renderStore(w *StoreWork) string {
	if w == nil {
		return ""
	}
	out := fmt.Sprintf(" store{gen=%d next=%d", w.Gen, w.NextSequence)
	if w.DeleteThrough > 0 {
		out += fmt.Sprintf(" delete_through=%d", w.DeleteThrough)
	}
	for _, c := range w.Roll {
		out += fmt.Sprintf(" roll=%d..%d", c.First, c.Last)
	}
	if w.RetainFrom > 0 {
		out += fmt.Sprintf(" retain_from=%d", w.RetainFrom)
	}
	if w.Sweep {
		out += fmt.Sprintf(" sweep_keep=%v", w.SweepKeep)
	}
	return out + "}"
}
