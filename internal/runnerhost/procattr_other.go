//go:build !linux

package runnerhost

import "syscall"

// pluginProcAttr leaves the plugin in the worker's process group where the
// platform cannot kill it when the worker dies.
func pluginProcAttr() *syscall.SysProcAttr { return nil }
