package steps

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
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
	attempts := newMailAttempts(ctx)
	stop := attempts.beat(ctx)
	defer stop()
	err := a.Notify.SendWith(ctx, in, attempts)
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

// notifyHeartbeat is what a SendNotification attempt records before a
// mail's data goes out.
type notifyHeartbeat struct {
	Sending bool `json:"sending"`
}

// mailAttempts keeps a mail from going out twice across the Step's
// attempts: the mark is a heartbeat recorded synchronously, which the next
// attempt reads. The Step heartbeats while it works, so an attempt whose
// worker died is tried again within its heartbeat timeout.
type mailAttempts struct {
	earlier bool
	sending atomic.Bool
}

// beat heartbeats every few seconds until stop, keeping the mark.
func (m *mailAttempts) beat(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, notifyHeartbeat{Sending: m.sending.Load() || m.earlier})
			}
		}
	}()
	return func() { close(done) }
}

func newMailAttempts(ctx context.Context) *mailAttempts {
	var hb notifyHeartbeat
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &hb) == nil {
		return &mailAttempts{earlier: hb.Sending}
	}
	return &mailAttempts{}
}

func (m *mailAttempts) Sending() bool { return m.earlier }

func (m *mailAttempts) MarkSending(ctx context.Context) error {
	m.sending.Store(true)
	return activity.GetClient(ctx).RecordActivityHeartbeat(ctx, activity.GetInfo(ctx).TaskToken, notifyHeartbeat{Sending: true})
}
