// Package sessionflow is the Temporal glue of a session: it runs the state
// machine of package session as a workflow.
//
// Workflow registers nothing itself; the worker (package daemon) registers
// the function it returns under the agent's flow type. The function
// registers the update, query and signal handlers (names in package
// wire), runs one Await loop that turns engine results (activity results,
// timers, updates) into session inputs, turns the commands Apply returns
// into activities, timers and events (exec), and continues as new at a
// turn boundary before the history grows too long, or onto a new worker
// version. It reads the clock only through workflow.Now and keeps every
// decision in the state machine.
//
//	workflow.go     Workflow, Runtime, the handlers, the Await loop, exec,
//	                versioning with GetVersion, continue-as-new
//	upgradeprobe.go the build tag of the upgrade test (upgradeprobe_on.go)
//
// Its tests run the workflow in Temporal's test environment
// (workflow_test.go), replay the recorded histories of testdata/histories
// (replay_test.go), and check what tracing and upgrades do to commands.
package sessionflow
