// Package agenttest is the integration test harness for agent sessions: a
// private Temporal engine on a SQLite file, worker child processes that a
// test can SIGKILL at an exact point (FileGate), an InvocationLog that counts
// real tool and model calls across processes, the step history of a session,
// and WaitFor, which polls with a deadline instead of sleeping.
//
//	func TestMain(m *testing.M) {
//		agenttest.RunWorkerIfChild()
//		os.Exit(m.Run())
//	}
//
//	func TestWriteSurvivesAWorkerKill(t *testing.T) {
//		stack := agenttest.NewStack(t, configYAML)
//		worker := stack.StartWorker()
//		id, _ := stack.Sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersAgent", InitialMessage: "refund order 7"})
//		snap := stack.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) > 0 })
//		worker.Kill()
//		stack.StartWorker()
//		stack.Sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true})
//	}
package agenttest
