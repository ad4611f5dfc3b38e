package runnerhost

import "syscall"

// pluginProcAttr puts a plugin in a process group of its own, so a signal
// meant for the worker's group (Ctrl-C in a terminal) does not stop a
// plugin while the worker drains its running Steps; the worker stops its
// plugins itself once they are done. Pdeathsig kills the plugin when the
// worker dies without stopping it (SIGKILL), so no plugin outlives it.
func pluginProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
