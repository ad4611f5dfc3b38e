// Package probe holds the cross-process test probes of agenttest: FileGate,
// which stops a process at an exact point, and InvocationLog, which counts
// real calls. It has no heavy dependencies, so test plugins import it.
package probe
