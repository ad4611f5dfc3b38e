// Command dex-agent-worker runs durable AI-agent sessions on Temporal.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
