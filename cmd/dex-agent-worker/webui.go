package main

import "net/http"

// webUI returns the chat page's handler.
func webUI() http.Handler { return nil }
