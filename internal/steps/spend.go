package steps

import (
	"context"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/spend"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// spendCall describes the model call a Step is about to make, for the
// spend limits; the policy is the config's, read now, so a changed budget
// applies from the next model call.
func (a *Activities) spendCall(ctx context.Context, in session.TurnInput, summary bool) (*spend.Policy, *spend.Call) {
	if a.SpendPolicy == nil {
		return nil, nil
	}
	p := a.SpendPolicy(in.Agent, in.Spend.APIToken)
	var parent *spend.Policy
	if b := in.Spend.Parent; b != nil {
		if pp := a.SpendPolicy(b.Agent, b.APIToken); pp.Active() {
			parent = pp
		}
	}
	if !p.Active() && parent == nil {
		return nil, nil
	}
	if !p.Active() {
		// The sub-agent's own agent sets nothing: check only the budget
		// above it, and price with its table.
		p = &spend.Policy{Agent: in.Agent, Prices: parent.Prices}
	}
	info := activity.GetInfo(ctx)
	return p, &spend.Call{
		Key:   info.WorkflowExecution.RunID + "/" + info.ActivityID + "/" + strconv.Itoa(int(info.Attempt)),
		Token: in.Spend.APIToken, SessionID: in.SessionID, TurnID: in.TurnID,
		Session: in.Spend.Session, Turn: in.Spend.Turn, Now: time.Now(), SummaryCall: summary,
		Parent: parentCall(parent, in.Spend),
	}
}

// parentCall is what a sub-agent's call counts against above it: the
// parent agent's session budgets, with what the tree used.
func parentCall(p *spend.Policy, in session.SpendInput) *spend.ParentCall {
	if p == nil || in.Parent == nil {
		return nil
	}
	used := in.Parent.Used
	used.ModelCalls += in.Session.ModelCalls
	used.InputTokens += in.Session.InputTokens
	used.OutputTokens += in.Session.OutputTokens
	used.CostMicros += in.Session.CostMicros
	return &spend.ParentCall{Agent: in.Parent.Agent, Limits: p.Limits, TokenLimits: p.TokenLimits, Used: used}
}

// checkSpend asks the limits before the model call: a refusal to return
// instead of calling, or an error when they cannot answer (fail closed).
func (a *Activities) checkSpend(ctx context.Context, p *spend.Policy, c *spend.Call) (*session.StepSpend, error) {
	if p == nil {
		return nil, nil
	}
	refused, err := a.Limiter.Check(ctx, p, c)
	if err != nil {
		return nil, err
	}
	if refused == nil && c.Parent != nil {
		refused = c.Parent.Check()
	}
	if refused == nil {
		return nil, nil
	}
	a.stepLogger(ctx, c.TurnID).Info("spend limit reached", "agent", p.Agent, "scope", refused.Scope, "counter", refused.Counter)
	return &session.StepSpend{Refused: refused}, nil
}

// chargeSpend prices the call that was made and charges it.
func (a *Activities) chargeSpend(ctx context.Context, p *spend.Policy, c *spend.Call, u pluginapi.Usage, m *pluginapi.ModelCallMetadata) *session.StepSpend {
	if p == nil {
		return nil
	}
	var names []string
	if m != nil {
		names = []string{m.RequestModel, m.ResponseModel}
	}
	cost, priced := p.Prices.Cost(names, u)
	if !priced {
		a.stepLogger(ctx, c.TurnID).Warn("spend: no price for the model; the call is counted at the price table's highest prices", "agent", p.Agent, "models", names)
	}
	cost, left := a.Limiter.Charge(ctx, p, c, spend.Of(u, cost))
	return &session.StepSpend{CostMicros: cost, Left: left}
}
