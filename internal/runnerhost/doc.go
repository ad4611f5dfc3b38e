// Package runnerhost launches the worker's runner plugins and hands out
// pluginapi.Runner values that call them.
//
// At start-up the worker launches each configured plugin, configures each
// agent, and closes the Host at shutdown:
//
//	h := runnerhost.New(logger)
//	defer h.Close()
//	if err := h.Launch(ctx, runnerhost.PluginSpec{Name: "stepwise", Command: "./bin/dex-runner-stepwise", Env: []string{"OPENAI_API_KEY"}}); err != nil {
//		return err // names the plugin, with its own message or stderr tail
//	}
//	if err := h.Configure(ctx, "stepwise", "support", runnerConfigJSON); err != nil {
//		return err // the plugin's message for bad config
//	}
//	tools := h.Tools("stepwise", "support") // what the plugin offers the agent; nil: unknown
//	runner, err := h.Runner("stepwise")
//
// Steps then call runner like any pluginapi.Runner; it also implements
// every optional interface, and Info tells which ones the plugin really
// has (a call it lacks fails with ErrUnsupported).
//
// A plugin process that dies is relaunched by the next call, after a
// capped exponential backoff, and receives every remembered configuration
// before any other call. The call that the crash cut short fails with an
// error wrapping ErrPluginShutdown, which a Temporal activity returns as an
// ordinary retryable error: retries are Temporal's business, not the
// Host's.
//
// A plugin process gets only the environment variables its spec lists
// (and go-plugin's handshake variables), always runs with mutual TLS (the
// AutoMTLS handshake, with a P-256 host certificate: see clientTLS), and is
// refused when its SHA-256 differs from the spec's. Its stderr and its
// hclog output go to the Host's logger with the attribute plugin=<name>,
// with the listed variables' values replaced by <redacted>. A plugin that
// printed to stdout before its handshake fails to start with an error that
// says so. The exit of a process the Host stopped is logged at INFO; a
// crash at ERROR.
package runnerhost
