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
	if !p.Active() {
		return nil, nil
	}
	info := activity.GetInfo(ctx)
	return p, &spend.Call{
		Key:   info.WorkflowExecution.RunID + "/" + info.ActivityID + "/" + strconv.Itoa(int(info.Attempt)),
		Token: in.Spend.APIToken, SessionID: in.SessionID, TurnID: in.TurnID,
		Session: in.Spend.Session, Turn: in.Spend.Turn, Now: time.Now(), SummaryCall: summary,
	}
}

// checkSpend asks the limits before the model call: a refusal to return
// instead of calling, or an error when they cannot answer (fail closed).
func (a *Activities) checkSpend(ctx context.Context, p *spend.Policy, c *spend.Call) (*session.StepSpend, error) {
	if p == nil {
		return nil, nil
	}
	refused, err := a.Limiter.Check(ctx, p, c)
	if err != nil || refused == nil {
		return nil, err
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
