package steps

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/internal/notify"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// SendNotification sends one notification of an interrupt to its channel.
// Every attempt sends the same idempotency key (the webhook-id), so a
// receiver drops a repeat; a channel that refuses the notification is not
// tried again. Errors never hold the channel's secrets.
func (a *Activities) SendNotification(ctx context.Context, in session.NotificationInput) error {
	defer a.begin()()
	if a.Notify == nil {
		return temporal.NewNonRetryableApplicationError("this worker sends no notifications (no notifications in its config)", wire.NotificationRefusedErrorType, nil)
	}
	err := a.Notify.Send(ctx, notify.Message{
		Channel: in.Channel, Escalation: in.Escalation, Key: in.Key,
		Interrupt: notify.Interrupt{
			SessionID: in.SessionID, Agent: in.Agent, InterruptID: in.InterruptID, Kind: in.Kind, ToolCallID: in.ToolCallID,
			ToolName: in.ToolName, Arguments: in.Arguments, ArgumentsRef: in.ArgumentsRef, Question: in.Question,
			Choices: in.Choices, Deadline: in.Deadline,
		},
	})
	if err == nil {
		a.stepLogger(ctx, "").Info("notification sent", "channel", in.Channel, "interrupt_id", in.InterruptID, "escalation", in.Escalation)
		return nil
	}
	msg := a.redact(err.Error())
	var perm *notify.Permanent
	if errors.As(err, &perm) {
		return temporal.NewNonRetryableApplicationError(msg, wire.NotificationRefusedErrorType, nil)
	}
	return temporal.NewApplicationError(msg, "NotificationNotSent")
}
