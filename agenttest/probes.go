package agenttest

import "github.com/dex-agents/dex-agent-worker/agenttest/probe"

// FileGate stops a process at an exact point; see probe.FileGate.
type FileGate = probe.FileGate

// InvocationLog counts real calls across processes; see probe.InvocationLog.
type InvocationLog = probe.InvocationLog

// Invocation is one InvocationLog record.
type Invocation = probe.Invocation
