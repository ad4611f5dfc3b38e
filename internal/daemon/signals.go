package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// ShutdownContext returns a context that ends at the first SIGINT or
// SIGTERM, which starts the draining stop (see Daemon.Stop). A second
// signal calls force, which should end the process at once: Steps still
// running are then cut short, and a write among them ends outcome_unknown.
// Call stop to release the signals.
func ShutdownContext(parent context.Context, force func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			force()
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
