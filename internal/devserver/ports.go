package devserver

import "github.com/dex-agents/dex-agent-worker/internal/freeport"

// FreePort returns a loopback TCP port that was free a moment ago and that
// this process has not handed out before, to the engine's services or
// anyone else (package freeport), for a server that binds it soon.
func FreePort() (int, error) { return freeport.Get() }
