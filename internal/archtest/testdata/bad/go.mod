// A module that breaks every import rule once, for archtest's own test.
module github.com/dex-agents/dex-agent-worker

go 1.26
