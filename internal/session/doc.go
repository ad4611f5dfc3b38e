// Package session is the core of one agent session: a deterministic state
// machine. Package sessionflow is the thin Temporal workflow that runs it.
//
// The state machine is State and its Apply. Apply takes one Input at a
// time (a user message, a Step's outcome, an answer, a timer that fired, a
// steer or a cancel) and returns a Result: the Commands the workflow glue
// carries out (run a Step, start or cancel a timer, publish an event) and
// the reply of the update that delivered the input. Everything that shapes
// the commands (policies, deadlines, limits) is in State.Options, fixed
// when the session starts and recorded in its history, so a replay of the
// history rebuilds the same state whatever the worker's config says by
// then. The state machine never reads the clock, never draws randomness
// and never ranges over a map; purity_test.go checks every file. It
// imports the standard library, package wire (what clients see) and
// package contract (what runners see) and nothing else, directly or
// through another package: internal/archtest says so. Its tests are table
// tests and the golden interaction scripts of testdata/, with no engine.
//
// The files of the state machine, by concept:
//
//	state.go        State, Options and the turn loop: queued messages, the next
//	                turn, the model's outcome, tool calls and their approvals
//	apply.go        the Input types, Apply and the Result it returns
//	commands.go     the Command types the glue carries out
//	stepio.go       the inputs and outputs of the Steps (activities), which travel
//	                through history and never grow with the session
//	window.go       the message window and the chunk index of the message store
//	snapshot.go     get_agent_snapshot and list_agent_messages
//	policy.go       the operator's policies as the authority on a call's effect
//	                and approval
//	interrupts.go   deadline warnings (interrupt_expiring) and extend_interrupt
//	builtin.go      the built-in tools ask_user and durable_wait
//	plan.go         write_todos, plan mode and execute_plan
//	toolinput.go    questions a tool asks before it takes effect
//	tooltask.go     tool tasks, polled after durable timers
//	control.go      steering, queued messages, cancel_turn and close_session
//	compaction.go   context compaction
//	spend.go        spend limits on model calls
//	recovery.go     the turn recovery budget
//	texts.go        texts the model sees
//	timefmt.go      deadlines as RFC 3339 text, without package time
//	limits.go       the timeouts and retry budgets of each Step type
//
// The workflow is in package sessionflow, the activities in package steps;
// the worker that registers both is in package daemon.
package session
