// Package steps holds the Steps of a session: the Temporal activities that
// do what the session's workflow (package session) asks, and return what
// happened as the session's own step types (session.ModelOutcome,
// session.ToolOutcome, ...). An Activities value holds their dependencies:
// the runner plugins, the MCP servers, the message store, the event broker,
// the spend limits, metrics and traces. The workflow refers to its methods
// by their registered names, the spec's Step names.
//
// A Step that fails in a way retrying cannot fix returns a non-retryable
// error; transient failures stay plain errors, which the engine retries by
// the Step's limits. Every tool Step records that it is about to call the
// tool (a heartbeat) before it does, so a retry after a lost worker knows
// whether the tool may have run.
//
// The files:
//
//	activities.go  Activities; BuildUserMessage, RunModel (the model call through
//	               the runner, tool policies and approval rules), CallTool and
//	               CallSingleAttemptTool (routed to the runner, a built-in or an
//	               MCP server), PollToolTask, RecordTurnFailure; the event writer
//	               and heartbeats
//	compact.go     CompactContext: the input estimate, the cutoff and the summary
//	cancel.go      CancelToolTask
//	store.go       the Steps' side of the message store: window rows, chunks,
//	               blobs, retention
//	sent.go        what this worker last sent each session's runner, so the next
//	               model call sends only what is new
//	liveness.go    bounds on a model call's stream (first chunk, gaps, the whole
//	               call)
//	spend.go       the spend limits checked before a model call
//	trace.go       the spans of a Step attempt
package steps
