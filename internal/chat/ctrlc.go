package chat

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"time"
)

// Ctrl-C in the chat: the first press while a turn runs stops the turn, a
// second one (while it stops, or within two seconds) ends the chat, and a
// press while no turn runs ends it at once.

type ctrlCKey struct{}

// ctrlCHandler hands os.Interrupt to the Run that is attached, and ends
// the context while none is.
type ctrlCHandler struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	to     chan os.Signal
}

func (h *ctrlCHandler) attach(ch chan os.Signal) {
	h.mu.Lock()
	h.to = ch
	h.mu.Unlock()
}

// InterruptContext returns a context that hands Ctrl-C (os.Interrupt) to
// Session.Run: while Run runs with it, a Ctrl-C stops the running turn and
// a second one ends the chat and the context; before and after Run, a
// Ctrl-C ends the context. It replaces every handler of os.Interrupt that
// the process registered with signal.Notify (such as one that ends the
// command's context at the first signal and exits at the second), so call
// it in a command that only chats. Once the context ends, os.Interrupt has
// its default effect again.
func InterruptContext(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	h := &ctrlCHandler{cancel: cancel}
	sigs := make(chan os.Signal, 1)
	signal.Reset(os.Interrupt)
	signal.Notify(sigs, os.Interrupt)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				h.mu.Lock()
				to := h.to
				h.mu.Unlock()
				if to == nil {
					cancel()
					return
				}
				select {
				case to <- sig:
				default: // Run has not taken the last one yet: it quits anyway
				}
			}
		}
	}()
	return context.WithValue(ctx, ctrlCKey{}, h)
}

// watchCtrlC hands each Ctrl-C to the loop, or quits the chat at a second
// one: while a turn is stopping, within ctrlCWindow of the last one, or
// while the loop has not taken the last one yet (it waits for the API).
func (c *loop) watchCtrlC(ctx context.Context, interrupts <-chan os.Signal, quit func()) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-interrupts:
		}
		now := time.Now()
		if c.stopping.Load() || (!last.IsZero() && now.Sub(last) < ctrlCWindow) {
			quit()
			return
		}
		last = now
		select {
		case c.ctrlC <- struct{}{}:
		default:
			quit()
			return
		}
	}
}
