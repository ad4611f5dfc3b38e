package main

import (
	"net/http"

	"github.com/dex-agents/dex-agent-worker/internal/webui"
)

// webUI returns the chat page's handler.
func webUI() http.Handler { return webui.Handler() }
