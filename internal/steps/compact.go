package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"go.temporal.io/sdk/activity"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/tracing"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// BytesPerToken is the spec's estimate of a text's tokens for a runner
// that cannot estimate its own input: three UTF-8 bytes per token, which
// errs high for English.
const BytesPerToken = 3

// compactionCutoff decides, before a model call, whether the turn must
// compact first: it estimates the next input (the runner's estimate, or
// BytesPerToken over the stored messages and the summary), adds the
// policy's reserved tokens, and past the threshold asks the runner where
// a summary may end. It returns that sequence when it is after the current
// summary, else 0.
func (a *Activities) compactionCutoff(ctx context.Context, r pluginapi.Runner, caps pluginapi.Capabilities, in session.TurnInput, attempt int) (int64, error) {
	p := in.Compaction
	compactor, ok := r.(pluginapi.Compactor)
	if !ok || !caps.Compaction {
		return 0, stepError("compaction", pluginapi.Permanent(errors.New("the agent has a compaction policy, but its runner does not implement compaction")))
	}
	var estimate int64
	err := a.withTranscript(ctx, caps, in, attempt, func(turn pluginapi.TurnContext) error {
		if e, ok := r.(pluginapi.InputTokenEstimator); ok && caps.InputTokenEstimation {
			resp, err := e.EstimateInputTokens(ctx, &pluginapi.EstimateInputTokensRequest{Turn: turn})
			if err == nil && resp != nil {
				estimate = resp.InputTokens
			}
			return err
		}
		if turn.CachedThrough > 0 {
			// Counting needs every message: send the whole transcript.
			return pluginapi.ErrTranscriptNotCached
		}
		estimate = estimateStored(turn)
		return nil
	})
	if err != nil {
		return 0, stepError("estimate_input_tokens", err)
	}
	estimate += p.ReservedInputTokens
	if float64(estimate) < p.TriggerRatio*float64(p.ContextWindowTokens) {
		return 0, nil
	}
	var through int64
	err = a.withTranscript(ctx, caps, in, attempt, func(turn pluginapi.TurnContext) error {
		resp, err := compactor.SelectCompactionCutoff(ctx, &pluginapi.CompactionCutoffRequest{
			Turn: turn, RetainedTokenBudget: int64(p.KeepRatio * float64(p.ContextWindowTokens)),
		})
		if err == nil {
			through = resp.ThroughSequence
		}
		return err
	})
	if err != nil {
		return 0, stepError("select_compaction_cutoff", err)
	}
	floor := int64(0)
	if in.Summary != nil {
		floor = in.Summary.LastSequence
	}
	if through <= floor {
		// Nothing more to summarize: the call goes ahead as it is.
		a.stepLogger(ctx, in.TurnID).Warn("the model input is past the compaction threshold, but the runner found nothing more to summarize",
			"estimated_tokens", estimate, "context_window_tokens", p.ContextWindowTokens)
		return 0, nil
	}
	return through, nil
}

// estimateStored is the spec's shared estimate of a turn's input: each
// stored message's framework item (its text without one) and the summary,
// at BytesPerToken bytes a token.
func estimateStored(turn pluginapi.TurnContext) int64 {
	var n int
	for _, m := range turn.Messages {
		if m.Item != "" {
			n += len(m.Item)
		} else {
			n += len(m.Text)
		}
	}
	if turn.ContextSummary != nil {
		n += len(turn.ContextSummary.Text)
	}
	return int64((n + BytesPerToken - 1) / BytesPerToken)
}

// CompactContext summarizes the messages after the turn's current summary
// through the cutoff, with RunModel's limits.
func (a *Activities) CompactContext(ctx context.Context, in session.CompactInput) (session.CompactOutcome, error) {
	defer a.begin()()
	start := time.Now()
	ctx = tracing.WithSession(ctx, in.Turn.SessionID)
	var out session.CompactOutcome
	err := a.modelCall(ctx, in.Turn.SessionID, in.Turn.TurnID, func(call context.Context) (err error) {
		out, err = a.compactContext(call, in)
		return err
	})
	out.Attempt = int(activity.GetInfo(ctx).Attempt)
	if a.Tracer != nil && (err != nil || out.Text != "" || out.TextRef != "") {
		c := tracing.Chat{Step: traceStep(ctx, in.Turn.TurnID), Start: start, Err: a.spanError(err)}
		traceUsage(&c, out.Usage, nil)
		a.Tracer.Chat(ctx, c)
	}
	return out, a.finish(ctx, err)
}

func (a *Activities) compactContext(ctx context.Context, in session.CompactInput) (session.CompactOutcome, error) {
	t := in.Turn
	r, caps, err := a.Runners.Runner(t.Agent)
	if err != nil {
		return session.CompactOutcome{}, err
	}
	compactor, ok := r.(pluginapi.Compactor)
	if !ok || !caps.Compaction || t.Transcript == nil || t.Compaction == nil {
		return session.CompactOutcome{}, stepError("compact_context", pluginapi.Permanent(errors.New("this session cannot compact: its runner does not implement compaction, or it keeps no message store")))
	}
	info := activity.GetInfo(ctx)
	w := a.writer(ctx, t.SessionID, t.TurnID, nil)
	w.streams = t.Streams
	w.model = session.StepHeartbeat{Attempt: int(info.Attempt)}
	defer w.close()
	w.recovering(wire.TurnRecoveringPayload{Step: info.ActivityType.Name})
	stop := a.heartbeatLoop(ctx, w)
	defer stop()
	tr := t.Transcript
	if in.Through < tr.From || in.Through > tr.Last {
		return session.CompactOutcome{}, stepError("compact_context", pluginapi.Permanent(fmt.Errorf("compaction cutoff %d is outside the transcript %d..%d", in.Through, tr.From, tr.Last)))
	}
	msgs, err := a.loadTranscript(ctx, t.SessionID, &session.Transcript{From: tr.From, WindowFirst: max(tr.WindowFirst, tr.From), Last: in.Through})
	if err != nil {
		return session.CompactOutcome{}, err
	}
	summary, err := a.summary(ctx, t.SessionID, t.Summary)
	if err != nil {
		return session.CompactOutcome{}, err
	}
	turn := turnContext(t, int(info.Attempt))
	turn.Messages, turn.ContextSummary = nil, summary
	prev := ""
	if summary != nil {
		prev = summary.Text
	}
	policy, call := a.spendCall(ctx, t, true)
	if refused, err := a.checkSpend(ctx, policy, call); err != nil {
		return session.CompactOutcome{}, err
	} else if refused != nil {
		return session.CompactOutcome{Spend: refused}, nil
	}
	resp, err := compactor.SummarizeContext(ctx, &pluginapi.SummarizeContextRequest{
		Turn: turn, Messages: msgs, PreviousSummary: prev, InputTokenBudget: t.Compaction.ContextWindowTokens, Events: w,
	})
	if err != nil {
		return session.CompactOutcome{}, stepError("summarize_context", err)
	}
	if resp == nil || resp.Summary == "" {
		return session.CompactOutcome{}, stepError("summarize_context", pluginapi.Permanent(errors.New("the runner returned an empty summary")))
	}
	text, ref, err := a.keepLarge(ctx, t.SessionID, resp.Summary)
	if err != nil {
		return session.CompactOutcome{}, err
	}
	return session.CompactOutcome{Text: text, TextRef: ref, Usage: resp.Usage, Spend: a.chargeSpend(ctx, policy, call, resp.Usage, resp.Metadata)}, nil
}
