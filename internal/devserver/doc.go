// Package devserver runs a single-machine Temporal server on a SQLite file,
// in-process. It backs `dex-agent-worker dev` and the integration test
// harness: no Docker, no external database, state survives restarts.
//
// The server is built from the public go.temporal.io/server API (the same
// pieces the Temporal CLI's dev server uses): one history shard, the four
// services (frontend, history, matching, worker) on 127.0.0.1 with static
// membership, and the SQLite persistence and visibility stores in
// DataDir/temporal.db (WAL journal, synchronous=FULL). Optionally it also
// serves the Temporal Web UI.
//
// Usage:
//
//	srv, err := devserver.Start(ctx, devserver.Options{
//		DataDir:                     filepath.Join(home, ".dex", "temporal"),
//		FrontendPort:                7233, // keep it fixed across restarts
//		UIPort:                      8233, // 0 = no Web UI
//		KeywordListSearchAttributes: []string{"ActiveStepTypes"},
//		Logger:                      logger, // receives the server's WARN+ logs
//	})
//	if err != nil {
//		return err
//	}
//	defer srv.Stop()
//
//	c, err := client.Dial(client.Options{
//		HostPort:  srv.FrontendAddress(),
//		Namespace: srv.Namespace(),
//	})
//
// Start returns once the frontend answers DescribeNamespace for the
// namespace and the custom search attributes are registered, so callers can
// dial and start workers immediately.
//
// Restarts are fast (~0.2 s to the first workflow task, also after kill -9)
// because membership is static: with ringpop, a restart would wait ~50 s for
// the previous run's members to expire.
//
// Notes:
//   - Only one Server may use a data directory at a time; a lock file
//     (DataDir/temporal.db.lock) enforces this, also within one process.
//     A crash while a new database is being created leaves
//     DataDir/temporal.db.init behind; the next Start then recreates the
//     database.
//   - Keep FrontendPort fixed across restarts of the same data directory (pass
//     Server.FrontendPort back in); the cluster metadata remembers it.
//   - The dynamic config differs from the server defaults only where a dev
//     machine needs it: visibility rate limit 100/s, namespace cache refresh
//     1 s, and the task queue scanner, history scanner and parent-close-policy
//     system workers off (the server never stops them, so they would leak
//     after Stop; history then applies parent close policies itself).
//   - The server's own logs reach Options.Logger at WARN and above; logs
//     emitted while Stop runs are dropped (shutdown noise).
//   - The SQLite plugin of the Temporal server keeps its database connection
//     open for the life of the process, even after Stop; a restart in the same
//     process reuses it. A new data directory per test therefore costs one
//     open file until the process exits, and a database file deleted while
//     the process runs cannot be recreated at the same path (Start says so).
//     About 30 idle goroutines (internal gRPC client connections of the
//     server) also stay behind per stopped server.
//   - SQLite visibility allows at most 3 KeywordList custom search attributes
//     per namespace.
//   - The Web UI (ui-server v2.56.4) exits the process if it cannot bind its
//     port; Start checks the port first, so this needs another process to
//     take the port within microseconds.
package devserver
