package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the loaded configs")

// goldenBaseDir stands in for the config file's directory in the golden
// files, so that they do not depend on where the repository is checked out.
const goldenBaseDir = "/etc/dex-agent-worker"

// testEnv is the environment the testdata files expect. Its values are
// distinctive so that a leak is easy to find.
var testEnv = map[string]string{
	"DEX_TEST_TEMPORAL_API_KEY":  "tk-LEAKED-temporal-key",
	"DEX_TEST_PLUGIN_TOKEN":      "pt-LEAKED-plugin-token",
	"DEX_TEST_MODEL_TOKEN":       "mt-LEAKED-model-token",
	"DEX_TEST_MAX_TURNS":         "12",
	"DEX_TEST_MESSAGE_STORE_DSN": "postgres://dex:pw-LEAKED-dsn@db.internal/dex",
	"DEX_TEST_REDIS_URL":         "redis://:pw-LEAKED-redis@redis.internal:6379/0",
	"DEX_TEST_EVENTS_KEY":        "ek-LEAKED-events-key-0123456789",
	"DEX_TEST_SHORT_KEY":         "short",
	"DEX_TEST_APPROVAL_OLD_KEY":  "ak-LEAKED-old-approval-key-0123",
	"DEX_TEST_BAD_REDIS_URL":     "http://redis.internal",
}

func setTestEnv(t *testing.T) {
	t.Helper()
	for k, v := range testEnv {
		t.Setenv(k, v)
	}
}

func TestGoodConfigs(t *testing.T) {
	setTestEnv(t)
	files, err := filepath.Glob("testdata/*.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.good.yml")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadBytes(data, goldenBaseDir)
			if err != nil {
				t.Fatalf("LoadBytes: %v", err)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate of a loaded config: %v", err)
			}
			got, err := cfg.Redacted()
			if err != nil {
				t.Fatalf("Redacted: %v", err)
			}
			golden := strings.TrimSuffix(file, ".good.yml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/config -update)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("resolved config differs from %s (-want +got):\n%s", golden, diff)
			}
			// The resolved config loads again to the same config: it is
			// complete and in the same format. (Values hidden as <secret>
			// differ, so only configs without any are compared.)
			if !bytes.Contains(got, []byte(redacted)) {
				again, err := LoadBytes(got, goldenBaseDir)
				if err != nil {
					t.Fatalf("loading the resolved config: %v", err)
				}
				if diff := cmp.Diff(cfg, again, cmpopts.IgnoreUnexported(Config{})); diff != "" {
					t.Errorf("resolved config loads differently (-first +again):\n%s", diff)
				}
			}
		})
	}
}

// expectedErrors lists every problem each testdata/*.bad.yml must produce,
// one entry per line of the error with its "testdata/<file>:" prefix cut.
var expectedErrors = []struct {
	filename string
	errs     []string
}{
	{
		filename: "unknown_key_top.bad.yml",
		errs:     []string{`1: temporl: unknown key (did you mean "temporal"?)`},
	},
	{
		filename: "unknown_key_nested.bad.yml",
		errs: []string{
			`3: temporal.tls.cert: unknown key (did you mean "cert_file"?)`,
			`4: temporal.tls.Key_File: unknown key (did you mean "key_file"?)`,
			`6: logging.levle: unknown key (did you mean "level"?)`,
			`10: plugins.stepwise.checksum: unknown key (known keys: args, command, env, sha256, trusts_tool_policies, venv)`,
			`15: agents[0].tool_policy: unknown key (did you mean "tool_policies"?)`,
			`18: agents[0].tool_policies.refund_order.requires_aproval: unknown key (did you mean "requires_approval"?)`,
			`20: agents[0].run_model_limit.max_attempts: unknown key (did you mean "maximum_attempts"?)`,
		},
	},
	{
		filename: "bad_effect.bad.yml",
		errs: []string{
			`10: agents[1].default_tool_effect: unknown effect "readonly" (want read, idempotent_write, non_idempotent_write or unclassified)`,
			`12: agents[1].tool_policies.refund.effect: unknown effect "write" (want read, idempotent_write, non_idempotent_write or unclassified)`,
			`13: agents[1].tool_policies.lookup.effect: is required (want read, idempotent_write, non_idempotent_write or unclassified)`,
			`14: agents[1].tool_policies[""]: tool name must not be empty`,
		},
	},
	{
		filename: "missing_env.bad.yml",
		errs: []string{
			`2: temporal.api_key: environment variable DEX_TEST_UNSET_VARIABLE is not set`,
			`4: temporal.task_queue: invalid reference ${1QUEUE}: want ${NAME} or ${NAME:-default} (write $$ for a literal $)`,
			`8: plugins.stepwise.args[0]: unterminated ${ (write $$ for a literal $)`,
		},
	},
	{
		filename: "bad_plugin.bad.yml",
		errs: []string{
			`2: plugins.stepwise.command: is required`,
			`3: plugins.stepwise.sha256: want 64 hexadecimal digits (a SHA-256 checksum), got 32 characters`,
			`4: plugins.stepwise.env[1]: invalid environment variable name "OPENAI-KEY": want a letter or _, then letters, digits or _`,
			`4: plugins.stepwise.env[2]: invalid environment variable name "1PASSWORD": want a letter or _, then letters, digits or _`,
			`4: plugins.stepwise.env[3]: duplicate environment variable OPENAI_API_KEY (also env[0])`,
			`5: plugins[""]: plugin name must not be empty`,
			`9: plugins.other.sha256: want 64 hexadecimal digits (a SHA-256 checksum), got 64 characters`,
			`13: agents[0].runner: unknown plugin "stepwize" (did you mean "stepwise"?)`,
		},
	},
	{
		filename: "no_plugins.bad.yml",
		errs:     []string{`4: agents[0].runner: unknown plugin "stepwise" (no plugins are defined)`},
	},
	{
		filename: "duplicate_names.bad.yml",
		errs: []string{
			`7: agents[1].name: duplicate agent name "support" (also agents[0])`,
			`8: agents[1].flow_type: duplicate flow type "SupportAgent" (also agents[0])`,
			`10: agents[2].name: invalid name "Support Team": want lowercase letters, digits, "_" and "-", starting with a letter or digit`,
			`11: agents[2].flow_type: invalid flow type "support-agent": want a letter, then letters, digits or "_"`,
			`13: agents[3].name: is required`,
			`13: agents[3].runner: is required`,
		},
	},
	{
		filename: "heartbeat.bad.yml",
		errs: []string{
			`8: agents[0].run_model_limit.heartbeat_timeout: must be at least 2s: a Step heartbeats every third of its heartbeat timeout, and the engine sends at most two heartbeats a second; got 500ms`,
			`11: agents[0].tool_limit.heartbeat_timeout: 30s is longer than start_to_close_timeout (10s), so it could never fire`,
		},
	},
	{
		filename: "approval_rules.bad.yml",
		errs: []string{
			`8: agents[0].approval_rules[0].when: does not compile: ERROR: <input>:1:1: undeclared reference to 'amount_cents' | amount_cents <= 2000 | ^`,
			`10: agents[0].approval_rules[1].when: is a int expression; it must be a bool`,
			`12: agents[0].approval_rules[2].reason: is required with decision deny: the model sees it as the call's rejection`,
			`13: agents[0].approval_rules[3].tool: is required: a tool name, or "*" for every tool`,
			`13: agents[0].approval_rules[3].decision: unknown decision "sometimes" (want allow, require_approval or deny)`,
		},
	},
	{
		filename: "deployment.bad.yml",
		errs: []string{
			`2: temporal.deployment.name: invalid deployment name "dex.agents": want letters, digits, "_" and "-" (a "." would join it to the build ID ambiguously)`,
			`2: temporal.deployment.build_id: invalid build ID "v 2": want at most 255 characters and no spaces`,
		},
	},
	{
		filename: "recovery.bad.yml",
		errs: []string{
			`7: agents[0].recovery.max_attempts: must be >= 0, got -1`,
			`11: agents[1].recovery.no_progress_timeout: must be at least 1s, got 100ms`,
			`15: agents[2].recovery: sets neither max_attempts nor no_progress_timeout (leave it out for no recovery budget)`,
			`19: agents[3].recovery.max_attempts: must be at most 10000, got 2147483647`,
		},
	},
	{
		filename: "interrupts.bad.yml",
		errs: []string{
			`2: approval_digest.key_env: the key in DEX_TEST_SHORT_KEY is 5 bytes; it must be at least 16 (try: openssl rand -hex 32)`,
			`3: approval_digest.previous_key_envs[0]: environment variable DEX_TEST_UNSET_KEY is not set`,
			`3: approval_digest.previous_key_envs[1]: invalid environment variable name "bad-name": want a letter or _, then letters, digits or _`,
			`12: agents[0].interrupt_expiring_lead: 2h must be less than interrupt_deadline 1h`,
			`13: agents[0].max_interrupt_deadline: 30m must be at least interrupt_deadline 1h`,
			`14: agents[0].run_model_limit.queue: unknown model queue "opena" (did you mean "openai"?)`,
			`19: agents[1].interrupt_expiring_lead: needs interrupt_deadline: without a deadline nothing expires`,
			`20: agents[1].max_interrupt_deadline: needs interrupt_deadline: without a deadline there is nothing to extend`,
			`22: model_queues.openai.activities_per_second: must be > 0 (leave it out for no limit), got -1`,
			`22: model_queues.openai.max_concurrent_per_worker: must be > 0 (leave it out for the default), got -2`,
			`23: model_queues["bad name"]: invalid model queue name "bad name": want letters, digits, "_" and "-" (it names a task queue)`,
		},
	},
	{
		filename: "model_liveness.bad.yml",
		errs: []string{
			`10: agents[0].run_model_limit.first_chunk_timeout: must be at least 1s (or unset for no bound), got 500ms`,
			`11: agents[0].run_model_limit.chunk_gap_timeout: 2m is longer than start_to_close_timeout (1m), so it could never fire`,
			`17: agents[1].run_model_limit.first_chunk_timeout: 45s is longer than call_timeout (40s), so it could never fire`,
			`18: agents[1].run_model_limit.chunk_gap_timeout: must be > 0, got -1s`,
		},
	},
	{
		filename: "bad_durations.bad.yml",
		errs: []string{
			`7: agents[0].interrupt_deadline: duration 90 has no unit: write it like 90s, 15m or 24h`,
			`9: agents[0].run_model_limit.start_to_close_timeout: must be > 0, got 0s`,
			`10: agents[0].run_model_limit.heartbeat_timeout: invalid duration "2 minutes": write it like 90s, 15m or 24h`,
			`11: agents[0].run_model_limit.maximum_attempts: must be >= 1, got 0`,
			`12: agents[0].run_model_limit.schedule_to_close_timeout: must be > 0, got -5m`,
			`16: agents[1].interrupt_deadline: duration 1.5 has no unit: write it like 90s, 15m or 24h`,
			`19: agents[1].run_model_limit.schedule_to_close_timeout: 10m must be >= start_to_close_timeout (20m)`,
			`20: agents[1].run_model_limit.maximum_attempts: integer 99999999999 is out of range`,
		},
	},
	{
		filename: "bad_temporal.bad.yml",
		errs: []string{
			`2: temporal.address: invalid address "localhost": want host:port, such as localhost:7233`,
			`3: temporal.namespace: is required`,
			`4: temporal.tls.key_file: is required when cert_file is set`,
			`7: logging.level: unknown level "verbose" (want debug, info, warn or error)`,
			`8: logging.format: unknown format "xml" (want text or json)`,
		},
	},
	{
		filename: "bad_types.bad.yml",
		errs: []string{
			`1: temporal: want a mapping, got "localhost:7233"`,
			`4: plugins.stepwise.command: want a string, got a sequence`,
			`5: plugins.stepwise.args: want a sequence, got "--verbose"`,
			`6: plugins.stepwise.env: want a sequence, got a mapping`,
			`8: agents: want a sequence, got a mapping`,
		},
	},
	{
		filename: "bad_types_agent.bad.yml",
		errs: []string{
			`7: agents[0].runner_config: want a mapping, got a sequence`,
			`9: agents[0].tool_policies.refund_order.requires_approval: want true or false, got "yes"`,
			`11: agents[0].run_model_limit.maximum_attempts: want an integer, got "three"`,
			`12: agents[0].run_model_limit.heartbeat_timeout: want a duration, got a mapping`,
		},
	},
	{
		filename: "runner_config_keys.bad.yml",
		errs: []string{
			`9: agents[0].runner_config.1: key 1 is an integer, not a string: quote it`,
			`11: agents[0].runner_config.limits.true: key true is a boolean, not a string: quote it`,
			`12: agents[0].runner_config.limits["~"]: key ~ is null, not a string: quote it`,
			`13: agents[0].runner_config.limits.max_cost: .inf cannot be represented in JSON`,
		},
	},
	{
		filename: "duplicate_keys.bad.yml",
		errs: []string{
			`3: plugins.stepwise: duplicate key (first set on line 2)`,
			`8: agents[0].runner: duplicate key (first set on line 7)`,
		},
	},
	{
		filename: "no_agents.bad.yml",
		errs:     []string{`agents: at least one agent is required`},
	},
	{
		filename: "http.bad.yml",
		errs: []string{
			`8: events.backend: unknown backend "kafka" (want "memory" or "redis")`,
			"9: events.capacity_bytes: must be at least 65536, got 10",
			`11: http.listen: invalid address "localhost": want host:port, such as 127.0.0.1:8080`,
			"14: http.auth.tokens[0].token: is too short: use at least 16 characters",
			"15: http.auth.tokens[1]: set token or token_env, not both",
			"16: http.auth.tokens[2]: set token (such as ${DEX_API_TOKEN}) or token_env",
			"17: http.auth.tokens[3].token_env: environment variable DEX_TEST_SURELY_UNSET_VAR is not set",
			"18: http.auth.tokens[4].token: has the same value as http.auth.tokens[1].token: one token, one scope (give each scope its own token)",
			`18: http.auth.tokens[4].agents[0]: unknown agent "b"`,
		},
	},
	{
		filename: "http_tokens.bad.yml",
		errs: []string{
			"13: http.auth.tokens[2].token: has the same value as http.auth.tokens[0].token: one token, one scope (give each scope its own token)",
			"14: http.auth.tokens[3].token: has the same value as http.auth.tokens[1].token_env: one token, one scope (give each scope its own token)",
			`15: http.auth.tokens[4].session_prefix: "a b" has a space, a control character or '/', which session IDs cannot have`,
		},
	},
	{
		filename: "http_limits.bad.yml",
		errs: []string{
			"8: events.max_total_bytes: must be at least capacity_bytes (10485760), got 1048576",
			"9: events.idle_ttl: must be at least 1m (idle sessions are swept once a minute), got 30s",
			"12: http.tls.key_file: is required when cert_file is set",
			"13: http.max_streams_per_token: must be > 0, got -1",
		},
	},
	{
		filename: "spend.bad.yml",
		errs: []string{
			"7: agents[0].spend_limits.per_session: set at least one of model_calls, input_tokens, output_tokens and cost_usd",
			"8: agents[0].spend_limits.per_turn.model_calls: must be > 0, got -1",
			"9: agents[0].spend_limits.per_day.cost_usd: needs prices: add a top-level prices table with the agent's models (or a default)",
			`10: agents[0].spend_limit.url: want an absolute http or https URL, got "ftp://billing"`,
			"10: agents[0].spend_limit.timeout: must be > 0 and at most 1m, got 2m",
			"14: http.auth.tokens[0].name: a token with spend_limits needs a name: its spend is counted by name",
		},
	},
	{
		filename: "builtins.bad.yml",
		errs: []string{
			"6: agents[0].plan_mode_enabled: plan mode needs the write_todos built-in: add it to built_in_tools",
			"7: agents[0].built_in_tools[1]: ask_user is listed twice",
			`7: agents[0].built_in_tools[2]: unknown built-in tool "todo_list" (want ask_user or durable_wait or write_todos)`,
			"9: agents[0].tool_policies.ask_user: ask_user is an enabled built-in tool: the session runs it (read, no approval), so it takes no policy",
		},
	},
	{
		filename: "subagents.bad.yml",
		errs: []string{
			"8: agents[0].sub_agents[1].agent: b is listed twice",
			"8: agents[0].sub_agents[1].max_turns: must be >= 0 (0: no bound), got -1",
			"9: agents[0].sub_agents[2].agent: an agent cannot be its own sub-agent",
			`10: agents[0].sub_agents[3].agent: unknown agent "nobody"`,
			`10: agents[0].sub_agents[3].mode: unknown mode "later" (want wait or background)`,
			"11: agents[0].sub_agents[4].agent: is required",
			"13: agents[0].tool_policies.delegate_to_b: delegate_to_b is a sub-agent's tool: the session runs it, and the sub-agent's own policies guard what it does",
		},
	},
	{
		filename: "links.bad.yml",
		errs: []string{
			"2: approval_links: needs approval_digest: a link is bound to the digest of the call it approves",
			"3: approval_links.key_env: the key in DEX_TEST_SHORT_KEY is 5 bytes; it must be at least 32 (try: openssl rand -hex 32)",
			"4: approval_links.previous_key_envs[0]: environment variable DEX_TEST_SURELY_UNSET_VAR is not set",
			`5: approval_links.public_url: want the absolute http or https URL people reach the HTTP API at, such as https://dex.example.com, got "ftp://dex.example.com"`,
			"6: approval_links.ttl: must be from 1s to 720h (30 days), got 1000h",
		},
	},
	{
		filename: "notify.bad.yml",
		errs: []string{
			`4: notifications.channels.hook.url: want an absolute http or https URL, got "ftp://x"`,
			"5: notifications.channels.chat.secret_env: a Slack incoming webhook is not signed: its URL is the secret (put it in url_env)",
			"5: notifications.channels.chat.secret_env: environment variable SOME_SECRET is not set",
			`6: notifications.channels.both.type: unknown channel type "pager" (want webhook, slack or email)`,
			"6: notifications.channels.both: set url or url_env (the variable that holds the URL), not both",
			`7: notifications.channels.mail.from: want one mail address, got "not an address"`,
			"7: notifications.channels.mail.to: is required: the addresses the mail goes to",
			"7: notifications.channels.mail.smtp.starttls: may be false only for a server on this machine (smtp.example.com is not): mail with approval links must not cross a network unencrypted",
			"7: notifications.channels.mail.smtp: set both username and password_env, or neither",
			`14: agents[0].notify[0].channel: unknown channel "nobody"`,
			`14: agents[0].notify[0].kinds[1]: unknown kind "alarm" (want approval or question)`,
			"15: agents[0].notify[1].escalate_after: must be shorter than the agent's interrupt_deadline (10m): the escalation goes out before the deadline",
			"16: agents[0].notify[2].escalate_after: is required with escalate_to",
		},
	},
	{
		filename: "mcp.bad.yml",
		errs: []string{
			"3: mcp_servers.both: set command or url, not both",
			"4: mcp_servers.none: set command (a stdio server) or url (a Streamable HTTP server)",
			`5: mcp_servers["a/b"]: invalid MCP server name "a/b": want letters, digits, "_" and "-" (it prefixes its tools' names)`,
			"7: mcp_servers.web.url: want an http or https URL with a host",
			"8: mcp_servers.web.env: is for stdio servers (command); send an HTTP server's secrets in headers",
			"9: mcp_servers.web.args: is for stdio servers (command)",
			`10: mcp_servers.web.headers["bad header"]: invalid HTTP header name "bad header"`,
			"13: mcp_servers.std.env[1]: duplicate environment variable PATH (also env[0])",
			`13: mcp_servers.std.env[2]: invalid environment variable name "1X": want a letter or _, then letters, digits or _`,
			"14: mcp_servers.std.headers: is for Streamable HTTP servers (url); pass a stdio server's secrets in env",
			"15: mcp_servers.std.request_timeout: must be > 0, got 0s",
			"16: mcp_servers.std.connection_attempts: must be at least 1, got 0",
			"17: mcp_servers.std.task_wait_timeout: must be > 0, got -1s",
			`22: agents[0].mcp[1]: duplicate MCP server "std" (also mcp[0])`,
			`22: agents[0].mcp[2]: unknown MCP server "fils" (mcp_servers: "a/b", "both", "none", "std", "web")`,
			`22: agents[0].mcp[3]: unknown MCP server "nope" (did you mean "none"?)`,
			"26: agents[1].resource_and_prompt_tools: needs MCP servers: name them in mcp",
		},
	},
	{
		filename: "events_redis.bad.yml",
		errs: []string{
			"3: events.url_env: DEX_TEST_BAD_REDIS_URL: scheme \"http\": want redis, rediss or unix",
			"4: events.token_key_env: the key in DEX_TEST_SHORT_KEY is 5 bytes; it must be at least 16 (try: openssl rand -hex 32)",
			"5: events.max_bytes_per_session: must be at least 65536, got 100",
			"6: events.ttl: must be at least 1s, got 10ms",
			"7: events.key_prefix: must not contain { or } (the session ID is the keys' hash tag)",
		},
	},
	{
		filename: "telemetry.bad.yml",
		errs: []string{
			`2: telemetry.metrics.prometheus: invalid address "9464": want host:port, such as :9464 or 127.0.0.1:9464`,
		},
	},
	{
		filename: "traces.bad.yml",
		errs: []string{
			`2: telemetry.traces.endpoint: "collector:4317" is not an http:// or https:// URL (such as http://otel-collector:4317)`,
			`2: telemetry.traces.protocol: unknown protocol "quic": want grpc or http`,
			"2: telemetry.traces.sample_ratio: must be in (0, 1], got 2",
			`2: telemetry.traces.headers_env: "bad-name" is not an environment variable name`,
		},
	},
	{
		filename: "traces_file.bad.yml",
		errs: []string{
			"2: telemetry.traces.file: is required with exporter file: the file the spans are appended to",
			"2: telemetry.traces.endpoint: endpoint and headers_env are for the otlp exporter; this one is file",
		},
	},
	{
		filename: "events_memory.bad.yml",
		errs: []string{
			`3: events.url_env: is for backend "redis" (backend is "memory"; its limits are capacity_bytes, max_total_bytes and idle_ttl)`,
			`4: events.ttl: is for backend "redis" (backend is "memory"; its limits are capacity_bytes, max_total_bytes and idle_ttl)`,
		},
	},
	{
		filename: "message_store.bad.yml",
		errs: []string{
			"6: agents[0].message_window_size: must be >= 1, got 0",
			"7: agents[0].message_chunk_size: must be >= 1, got -1",
			"8: agents[0].message_chunk_max_bytes: must be from 1024 (1 KiB) to 8388608 (8 MiB), got 512",
			"9: agents[0].retained_message_limit: must be >= 1, or null to keep every message, got 0",
			"13: agents[1].message_chunk_max_bytes: must be from 1024 (1 KiB) to 8388608 (8 MiB), got 8388609",
			`14: agents[1].retained_message_limit: want an integer, or null for no limit, got "all"`,
			`18: agents[2].retained_message_limit: want an integer, or null for no limit, got "1.5"`,
			`21: message_store.path: is for driver "sqlite" (driver is "postgres")`,
			"22: message_store.dsn_env: environment variable DEX_TEST_SURELY_UNSET_DSN is not set",
			"23: message_store.cache_bytes: must be >= 0 (0 turns the cache off), got -1",
		},
	},
	{
		filename: "message_store_sqlite.bad.yml",
		errs: []string{
			"3: message_store.path: is required",
			`5: message_store.dsn_env: is for driver "postgres" (driver is "sqlite")`,
			`6: message_store.cache_bytes: want an integer, got "1KiB"`,
		},
	},
	{
		filename: "message_store_driver.bad.yml",
		errs: []string{
			`4: message_store.driver: unknown driver "mysql" (want "sqlite" or "postgres")`,
			`5: message_store.dsn: unknown key (did you mean "dsn_env"?)`,
		},
	},
	{
		filename: "syntax.bad.yml",
		errs:     []string{`2: invalid YAML: did not find expected ',' or '}'`},
	},
	{
		// The parser names line 3, where the agents list starts; the
		// mis-indented key is at line 13.
		filename: "indentation.bad.yml",
		errs:     []string{`13: invalid YAML: did not find expected '-' indicator (in the block that starts at line 3; check this line's indentation)`},
	},
	{
		filename: "top_level.bad.yml",
		errs:     []string{`1: the top level must be a mapping, got a sequence`},
	},
	{
		filename: "two_documents.bad.yml",
		errs:     []string{`5: only one YAML document is allowed`},
	},
	{
		filename: "alias_cycle.bad.yml",
		errs:     []string{`8: agents[0].runner_config.nested: alias *cfg refers to a node that contains it`},
	},
}

func TestBadConfigs(t *testing.T) {
	setTestEnv(t)
	listed := make(map[string]bool)
	for _, ee := range expectedErrors {
		listed[ee.filename] = true
		t.Run(ee.filename, func(t *testing.T) {
			file := filepath.Join("testdata", ee.filename)
			cfg, err := Load(file)
			if err == nil {
				t.Fatalf("Load succeeded, want errors:\n%s", strings.Join(ee.errs, "\n"))
			}
			if cfg != nil {
				t.Errorf("Load returned a config with an error")
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error is %T, want *ValidationError: %v", err, err)
			}
			if verr.File != file {
				t.Errorf("File = %q, want %q", verr.File, file)
			}
			var got []string
			for _, line := range strings.Split(err.Error(), "\n") {
				got = append(got, strings.TrimSpace(strings.TrimPrefix(line, file+":")))
			}
			if diff := cmp.Diff(ee.errs, got); diff != "" {
				t.Errorf("errors differ (-want +got):\n%s", diff)
			}
		})
	}
	// Every bad file has an entry.
	files, err := filepath.Glob("testdata/*.bad.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s has no entry in expectedErrors", f)
		}
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := Load("testdata/minimal.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Temporal: Temporal{Address: "localhost:7233", Namespace: "default", TaskQueue: "dex-agents"},
		Logging:  Logging{Level: "info", Format: "text"},
		Plugins:  map[string]Plugin{"stepwise": {Command: "dex-runner-stepwise"}},
		Agents: []Agent{{
			Name:              "support",
			FlowType:          "SupportAgent",
			Runner:            "stepwise",
			DefaultToolEffect: EffectUnclassified,
			RunModelLimit: RunModelLimit{
				StartToCloseTimeout:    15 * time.Minute,
				HeartbeatTimeout:       2 * time.Minute,
				MaximumAttempts:        3,
				ScheduleToCloseTimeout: 30 * time.Minute,
			},
			ToolLimit:            ToolLimit{StartToCloseTimeout: 15 * time.Minute, HeartbeatTimeout: time.Minute, MaximumAttempts: 3},
			MaxDurableWait:       365 * 24 * time.Hour,
			MessageWindowSize:    64,
			MessageChunkSize:     32,
			MessageChunkMaxBytes: 1 << 20,
			RetainedMessageLimit: MessageLimit{N: 1000},
		}},
		Events:          Events{Backend: "memory", CapacityBytes: 10 * 1024 * 1024, MaxTotalBytes: 256 * 1024 * 1024, IdleTTL: time.Hour},
		HTTP:            HTTP{MaxStreamsPerToken: 64},
		ShutdownTimeout: 30 * time.Second,
	}
	if diff := cmp.Diff(want, cfg, cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("minimal config (-want +got):\n%s", diff)
	}
	if got := cfg.Logging.SlogLevel(); got != slog.LevelInfo {
		t.Errorf("SlogLevel() = %v, want INFO", got)
	}
}

func TestFullConfig(t *testing.T) {
	setTestEnv(t)
	cfg, err := Load("testdata/full.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Temporal.APIKey.Reveal(), testEnv["DEX_TEST_TEMPORAL_API_KEY"]; got != want {
		t.Errorf("api_key = %q, want %q", got, want)
	}
	if got, want := cfg.Temporal.Namespace, "my-ns.a1b2c"; got != want {
		t.Errorf("namespace = %q, want the default %q", got, want)
	}
	wantTLS := &TLS{
		CertFile:   filepath.Join(dir, "certs/client.pem"),
		KeyFile:    filepath.Join(dir, "certs/client.key"),
		CAFile:     "/etc/ssl/certs/ca.pem",
		ServerName: "my-ns.a1b2c.tmprl.cloud",
	}
	if diff := cmp.Diff(wantTLS, cfg.Temporal.TLS); diff != "" {
		t.Errorf("tls (-want +got):\n%s", diff)
	}
	wantPlugins := map[string]Plugin{
		"stepwise": {
			Command: filepath.Join(dir, "../bin/dex-runner-stepwise"),
			Args:    []string{"--listen-timeout", "30s", "--token=pt-LEAKED-plugin-token"},
			SHA256:  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Env:     []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"},
		},
		"python": {Command: "/opt/dex/runners/python-runner", Args: []string{}},
	}
	if diff := cmp.Diff(wantPlugins, cfg.Plugins); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}

	support, ok := cfg.Agent("support")
	if !ok {
		t.Fatal(`Agent("support") not found`)
	}
	wantRunnerConfig := `{"auth_header":"Bearer mt-LEAKED-model-token","base_url":"https://api.openai.com/v1","extra":null,` +
		`"instructions":"You help customers with their orders. Prices are in $USD.","max_turns":12,` +
		`"model":{"api_key_env":"OPENAI_API_KEY","name":"gpt-5-mini","provider":"openai"},"stop":["END","null"],"temperature":0.2}`
	if got, err := support.RunnerConfigJSON(); err != nil || string(got) != wantRunnerConfig {
		t.Errorf("RunnerConfigJSON() = %s, %v\nwant %s", got, err, wantRunnerConfig)
	}
	if got, want := support.InterruptDeadline, 24*time.Hour; got != want {
		t.Errorf("interrupt_deadline = %v, want %v", got, want)
	}
	wantLimit := RunModelLimit{
		StartToCloseTimeout:    10 * time.Minute,
		HeartbeatTimeout:       90 * time.Second,
		MaximumAttempts:        5,
		ScheduleToCloseTimeout: 90 * time.Minute,
		Queue:                  "openai",
	}
	if diff := cmp.Diff(wantLimit, support.RunModelLimit); diff != "" {
		t.Errorf("run_model_limit (-want +got):\n%s", diff)
	}

	// The second agent merges the first one's tool policies (<<: *anchor)
	// and overrides one.
	triage, ok := cfg.AgentByFlowType("Triage_Agent2")
	if !ok || triage.Name != "triage_bot-2" {
		t.Fatalf(`AgentByFlowType("Triage_Agent2") = %v, %v`, triage, ok)
	}
	no, yes := false, true
	wantPolicies := map[string]ToolPolicy{
		"lookup_order":   {Effect: EffectRead, RequiresApproval: &no},
		"refund_order":   {Effect: EffectNonIdempotentWrite, RequiresApproval: &no},
		"update_address": {Effect: EffectIdempotentWrite},
		"files.read":     {Effect: EffectRead},
		"close_ticket":   {Effect: EffectUnclassified},
	}
	if diff := cmp.Diff(wantPolicies, triage.ToolPolicies); diff != "" {
		t.Errorf("merged tool_policies (-want +got):\n%s", diff)
	}
	if got := support.ToolPolicies["refund_order"].RequiresApproval; got == nil || *got != yes {
		t.Errorf("support refund_order requires_approval = %v, want true", got)
	}
	if got, err := triage.RunnerConfigJSON(); err != nil || string(got) != "{}" {
		t.Errorf("RunnerConfigJSON() of an agent without runner_config = %s, %v; want {}", got, err)
	}
}

func TestLoadResolvesCommand(t *testing.T) {
	cfg, err := Load("testdata/dev.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Plugins["orders"].Command, filepath.Join(dir, "../../../bin/dex-runner-orders"); got != want {
		t.Errorf("command = %q, want %q", got, want)
	}

	for _, tt := range []struct {
		venv, want string
	}{
		{"../runners/.venv", "/etc/runners/.venv/bin/python"},
		{"/opt/venv", "/opt/venv/bin/python"},
	} {
		doc := fmt.Sprintf("plugins: {p: {command: python, venv: %q}}\nagents: [{name: a, flow_type: A, runner: p}]\n", tt.venv)
		cfg, err := LoadBytes([]byte(doc), "/etc/dex")
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Plugins["p"].Command; got != tt.want {
			t.Errorf("venv %s: command = %q, want %q", tt.venv, got, tt.want)
		}
	}

	for _, tt := range []struct {
		command, baseDir, want string
	}{
		{"dex-runner", "/etc/dex", "dex-runner"},            // bare name: looked up on PATH at launch
		{"./dex-runner", "/etc/dex", "/etc/dex/dex-runner"}, // relative path
		{"../bin/dex-runner", "/etc/dex", "/etc/bin/dex-runner"},
		{"/usr/bin/dex-runner", "/etc/dex", "/usr/bin/dex-runner"},
		{"./dex-runner", "", "./dex-runner"}, // no base: kept relative to the working directory
	} {
		t.Run(tt.command+" in "+tt.baseDir, func(t *testing.T) {
			doc := fmt.Sprintf("plugins: {p: {command: %q}}\nagents: [{name: a, flow_type: A, runner: p}]\n", tt.command)
			cfg, err := LoadBytes([]byte(doc), tt.baseDir)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Plugins["p"].Command; got != tt.want {
				t.Errorf("command = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"NAME": "value", "EMPTY": "", "YAML": "{a: b}\nc: [d]"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tt := range []struct {
		in, want, err string
		used          bool
	}{
		{in: "plain", want: "plain"},
		{in: "${NAME}", want: "value", used: true},
		{in: "pre-${NAME}-${NAME}-post", want: "pre-value-value-post", used: true},
		{in: "${EMPTY}", want: "", used: true},
		{in: "${EMPTY:-fallback}", want: "fallback", used: true},
		{in: "${UNSET:-fallback}", want: "fallback", used: true},
		{in: "${UNSET:-}", want: "", used: true},
		{in: "${NAME:-fallback}", want: "value", used: true},
		{in: "${UNSET:-a:-b $$ {c}", want: "a:-b $$ {c", used: true}, // the default is literal up to the first }
		{in: "$$", want: "$"},
		{in: "$${NAME}", want: "${NAME}"},
		{in: "$$$${NAME}", want: "$${NAME}"},
		{in: "$$${NAME}", want: "$value", used: true},
		{in: "cost: $5 or $NAME", want: "cost: $5 or $NAME"},
		{in: "trailing $", want: "trailing $"},
		{in: "${YAML}", want: "{a: b}\nc: [d]", used: true},
		{in: "${UNSET}", err: "environment variable UNSET is not set"},
		{in: "${NAME", err: "unterminated ${ (write $$ for a literal $)"},
		{in: "${}", err: "invalid reference ${}: want ${NAME} or ${NAME:-default} (write $$ for a literal $)"},
		{in: "${A-B}", err: "invalid reference ${A-B}: want ${NAME} or ${NAME:-default} (write $$ for a literal $)"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, used, err := expandEnv(tt.in, lookup)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("expandEnv(%q) error = %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("expandEnv(%q): %v", tt.in, err)
			}
			if got != tt.want || used != tt.used {
				t.Errorf("expandEnv(%q) = %q, %v; want %q, %v", tt.in, got, used, tt.want, tt.used)
			}
		})
	}
}

// TestEnvInDocument checks where expansion happens: in values after
// parsing (so YAML in a variable stays one string), never in keys, and with
// plain values typed after expansion.
func TestEnvInDocument(t *testing.T) {
	t.Setenv("DEX_TEST_INJECT", "x\nagents: []\nplugins: {evil: {command: /bin/sh}}")
	t.Setenv("DEX_TEST_ATTEMPTS", "7")
	t.Setenv("DEX_TEST_FLAG", "true")
	t.Setenv("DEX_TEST_EMPTY", "")
	t.Setenv("DEX_TEST_TOOL", "should_not_be_used")
	doc := `
temporal:
  task_queue: "${DEX_TEST_INJECT}"
  namespace: ${DEX_TEST_INJECT}
plugins:
  p: {command: dex-runner}
agents:
  - name: a
    flow_type: A
    runner: p
    tool_policies:
      ${DEX_TEST_TOOL}: {effect: read}
    run_model_limit:
      maximum_attempts: ${DEX_TEST_ATTEMPTS}
    runner_config:
      number: ${DEX_TEST_ATTEMPTS}
      quoted: "${DEX_TEST_ATTEMPTS}"
      flag: ${DEX_TEST_FLAG}
      empty: ${DEX_TEST_EMPTY}
      literal: 'costs $$5'
`
	cfg, err := LoadBytes([]byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	inject := os.Getenv("DEX_TEST_INJECT")
	if cfg.Temporal.TaskQueue != inject || cfg.Temporal.Namespace != inject {
		t.Errorf("task_queue, namespace = %q, %q; want both %q", cfg.Temporal.TaskQueue, cfg.Temporal.Namespace, inject)
	}
	if _, ok := cfg.Plugins["evil"]; ok || len(cfg.Agents) != 1 {
		t.Errorf("a variable's YAML added structure: plugins %v, %d agents", cfg.Plugins, len(cfg.Agents))
	}
	a := &cfg.Agents[0]
	if _, ok := a.ToolPolicies["${DEX_TEST_TOOL}"]; !ok {
		t.Errorf("tool_policies keys = %v, want the key kept as written", a.ToolPolicies)
	}
	if a.RunModelLimit.MaximumAttempts != 7 {
		t.Errorf("maximum_attempts = %d, want 7", a.RunModelLimit.MaximumAttempts)
	}
	got, err := a.RunnerConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"empty":"","flag":true,"literal":"costs $5","number":7,"quoted":"7"}`
	if string(got) != want {
		t.Errorf("RunnerConfigJSON() = %s, want %s", got, want)
	}

	// A quoted reference is a string, so it is not an integer.
	bad := strings.Replace(doc, "maximum_attempts: ${DEX_TEST_ATTEMPTS}", `maximum_attempts: "${DEX_TEST_ATTEMPTS}"`, 1)
	_, err = LoadBytes([]byte(bad), "")
	if want := `line 14: agents[0].run_model_limit.maximum_attempts: want an integer, got "7"`; err == nil || err.Error() != want {
		t.Errorf("quoted integer: error = %v, want %q", err, want)
	}
}

func TestSecretsHidden(t *testing.T) {
	setTestEnv(t)
	cfg, err := Load("testdata/full.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Temporal.APIKey.Reveal() == "" {
		t.Fatal("the api_key was not loaded")
	}
	red, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	jsonCfg, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("loaded", "config", cfg, "api_key", cfg.Temporal.APIKey, "temporal", cfg.Temporal)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("loaded", "config", cfg, "api_key", cfg.Temporal.APIKey, "temporal", cfg.Temporal)

	outputs := map[string]string{
		"Redacted":    string(red),
		"%v":          fmt.Sprintf("%v", cfg),
		"%+v":         fmt.Sprintf("%+v", *cfg),
		"%#v":         fmt.Sprintf("%#v", *cfg),
		"%s":          fmt.Sprintf("%s", cfg.Temporal.APIKey),
		"%q":          fmt.Sprintf("%q", cfg.Temporal.APIKey),
		"%x":          fmt.Sprintf("%x", cfg.Temporal.APIKey),
		"json":        string(jsonCfg),
		"slog text":   text.String(),
		"slog json":   js.String(),
		"temporal %v": fmt.Sprintf("%+v", cfg.Temporal),
	}
	for name, out := range outputs {
		if strings.Contains(out, testEnv["DEX_TEST_TEMPORAL_API_KEY"]) {
			t.Errorf("%s shows the api_key:\n%s", name, out)
		}
		// encoding/json escapes < and > by default.
		if name != "%x" && !strings.Contains(out, "<secret>") && !strings.Contains(out, `\u003csecret\u003e`) {
			t.Errorf("%s does not show <secret>:\n%s", name, out)
		}
	}
	// Redacted also hides what reached plugin args and runner_config from
	// the environment.
	for _, name := range []string{"DEX_TEST_PLUGIN_TOKEN", "DEX_TEST_MODEL_TOKEN"} {
		if strings.Contains(string(red), testEnv[name]) {
			t.Errorf("Redacted shows $%s:\n%s", name, red)
		}
	}
}

func TestSecret(t *testing.T) {
	s := Secret("hunter2")
	if s.Reveal() != "hunter2" {
		t.Errorf("Reveal() = %q", s.Reveal())
	}
	if got := fmt.Sprint(s); got != "<secret>" {
		t.Errorf("String() = %q", got)
	}
	if got := fmt.Sprintf("%#v", s); got != `config.Secret("<secret>")` {
		t.Errorf("GoString() = %q", got)
	}
	var decoded string
	if b, err := json.Marshal(s); err != nil || json.Unmarshal(b, &decoded) != nil || decoded != "<secret>" {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
	if b, err := yaml.Marshal(map[string]Secret{"k": s}); err != nil || string(b) != "k: <secret>\n" {
		t.Errorf("yaml.Marshal = %q, %v", b, err)
	}
	if got := s.LogValue().String(); got != "<secret>" {
		t.Errorf("LogValue() = %q", got)
	}
	if got := Secret("").String(); got != "" {
		t.Errorf(`Secret("").String() = %q, want ""`, got)
	}
}

// TestValidate checks a Config built in code, including the checks that
// decoding makes first for files (durations > 0).
func TestValidate(t *testing.T) {
	cfg := &Config{
		Temporal: Temporal{Address: "dns:///temporal.internal:7233", Namespace: "default", TaskQueue: "q",
			TLS: &TLS{KeyFile: "client.key"}},
		Logging:         Logging{Level: "info", Format: "text"},
		ShutdownTimeout: time.Minute,
		Plugins:         map[string]Plugin{"p": {Command: "dex-runner", SHA256: strings.Repeat("AB", 32)}},
		Agents: []Agent{{
			Name:              "a",
			FlowType:          "A",
			Runner:            "p",
			DefaultToolEffect: EffectRead,
			ToolPolicies:      map[string]ToolPolicy{" ": {Effect: EffectRead}},
			InterruptDeadline: -time.Second,
			RunModelLimit:     RunModelLimit{HeartbeatTimeout: -time.Minute, ScheduleToCloseTimeout: time.Minute},
			ToolLimit:         ToolLimit{StartToCloseTimeout: time.Minute, HeartbeatTimeout: 3 * time.Second, MaximumAttempts: 0},
			// Zero message settings, as an Agent built in code has: none
			// means a default here.
		}},
		MessageStore: &MessageStore{Driver: "postgres", DSNEnv: "1DSN"},
	}
	err := cfg.Validate()
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Validate() = %v, want a *ValidationError", err)
	}
	want := []*FieldError{
		{Path: "temporal.tls.cert_file", Message: "is required when key_file is set"},
		{Path: `agents[0].tool_policies[" "]`, Message: "tool name must not be empty"},
		{Path: "agents[0].interrupt_deadline", Message: "must be > 0 (leave it out for no deadline), got -1s"},
		{Path: "agents[0].run_model_limit.start_to_close_timeout", Message: "must be > 0, got 0s"},
		{Path: "agents[0].run_model_limit.heartbeat_timeout", Message: "must be > 0, got -1m"},
		{Path: "agents[0].run_model_limit.maximum_attempts", Message: "must be >= 1, got 0"},
		{Path: "agents[0].tool_limit.maximum_attempts", Message: "must be >= 1, got 0"},
		{Path: "agents[0].message_window_size", Message: "must be >= 1, got 0"},
		{Path: "agents[0].message_chunk_size", Message: "must be >= 1, got 0"},
		{Path: "agents[0].message_chunk_max_bytes", Message: "must be from 1024 (1 KiB) to 8388608 (8 MiB), got 0"},
		{Path: "agents[0].retained_message_limit", Message: "must be >= 1, or null to keep every message, got 0"},
		{Path: "message_store.dsn_env", Message: `invalid environment variable name "1DSN": want a letter or _, then letters, digits or _`},
	}
	if diff := cmp.Diff(want, verr.Errors); diff != "" {
		t.Errorf("Validate() errors (-want +got):\n%s", diff)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "temporal.tls.cert_file" {
		t.Errorf("errors.As(*FieldError) = %v", fe)
	}
	wantText := "temporal.tls.cert_file: is required when key_file is set\n" +
		`agents[0].tool_policies[" "]: tool name must not be empty`
	if got := err.Error(); !strings.HasPrefix(got, wantText) {
		t.Errorf("Error() =\n%s\nwant it to start with\n%s", got, wantText)
	}

	// The same config made valid passes.
	cfg.Temporal.TLS = &TLS{}
	cfg.Agents[0].ToolPolicies = nil
	cfg.Agents[0].InterruptDeadline = 0
	cfg.Agents[0].RunModelLimit = RunModelLimit{StartToCloseTimeout: time.Minute, HeartbeatTimeout: 2 * time.Second, MaximumAttempts: 1, ScheduleToCloseTimeout: time.Minute}
	cfg.Agents[0].ToolLimit.MaximumAttempts = 1
	cfg.Agents[0].MessageWindowSize, cfg.Agents[0].MessageChunkSize, cfg.Agents[0].MessageChunkMaxBytes = 1, 1, 1024
	cfg.Agents[0].RetainedMessageLimit = MessageLimit{Unlimited: true}
	cfg.MessageStore = &MessageStore{Driver: "sqlite", Path: "m.db"}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate() of a valid config: %v", err)
	}
}

// TestHTTPTLS checks that http.tls needs both files and that their paths
// are resolved against the config file's directory.
func TestHTTPTLS(t *testing.T) {
	base := "plugins: {p: {command: x}}\nagents: [{name: a, flow_type: A, runner: p}]\nhttp:\n"
	_, err := LoadBytes([]byte(base+"  tls: {}\n"), "/etc/dex")
	if want := "line 4: http.tls: set cert_file and key_file, or leave tls out to serve plain HTTP"; err == nil || err.Error() != want {
		t.Errorf("empty tls: error = %v, want %q", err, want)
	}
	_, err = LoadBytes([]byte(base+"  tls: {key_file: k.pem}\n"), "/etc/dex")
	if want := "line 4: http.tls.cert_file: is required when key_file is set"; err == nil || err.Error() != want {
		t.Errorf("key without cert: error = %v, want %q", err, want)
	}
	cfg, err := LoadBytes([]byte(base+"  tls: {cert_file: certs/c.pem, key_file: /abs/k.pem}\n"), "/etc/dex")
	if err != nil {
		t.Fatal(err)
	}
	if got := *cfg.HTTP.TLS; got != (HTTPTLS{CertFile: "/etc/dex/certs/c.pem", KeyFile: "/abs/k.pem"}) {
		t.Errorf("tls = %+v", got)
	}
}

func TestToolPolicy(t *testing.T) {
	yes, no := true, false
	a := &Agent{
		DefaultToolEffect: EffectIdempotentWrite,
		ToolPolicies: map[string]ToolPolicy{
			"refund": {Effect: EffectNonIdempotentWrite},
			"search": {Effect: EffectRead, RequiresApproval: &yes},
			"delete": {Effect: EffectUnclassified, RequiresApproval: &no},
		},
	}
	for _, tt := range []struct {
		tool            string
		framework       Effect
		want            Effect
		requireApproval bool
	}{
		{"refund", EffectRead, EffectNonIdempotentWrite, true}, // explicit policy wins
		{"search", "", EffectRead, true},
		{"delete", "", EffectUnclassified, false},
		{"mcp_read", EffectRead, EffectRead, false}, // framework metadata next
		{"other", "", EffectIdempotentWrite, false}, // then default_tool_effect
	} {
		t.Run(tt.tool, func(t *testing.T) {
			p := a.ResolveToolPolicy(tt.tool, tt.framework)
			if p.Effect != tt.want || p.ApprovalRequired() != tt.requireApproval {
				t.Errorf("ResolveToolPolicy(%q, %q) = %s (approval %v), want %s (approval %v)",
					tt.tool, tt.framework, p.Effect, p.ApprovalRequired(), tt.want, tt.requireApproval)
			}
		})
	}
	for _, e := range []Effect{EffectRead, EffectIdempotentWrite, EffectNonIdempotentWrite, EffectUnclassified} {
		if !e.Valid() {
			t.Errorf("%s.Valid() = false", e)
		}
	}
	if Effect("write").Valid() || Effect("").Valid() {
		t.Error("an unknown effect is valid")
	}
}

func TestUnofferedToolPolicies(t *testing.T) {
	a := &Agent{ToolPolicies: map[string]ToolPolicy{
		"refund_order": {Effect: EffectNonIdempotentWrite},
		"lookup_ordr":  {Effect: EffectRead},
		"cancel":       {Effect: EffectRead},
	}}
	tests := []struct {
		offered []string
		want    []string
	}{
		{offered: nil, want: nil}, // the runner does not report its tools
		{offered: []string{"lookup_order", "refund_order"}, want: []string{"cancel", "lookup_ordr"}},
		{offered: []string{"cancel", "lookup_ordr", "refund_order", "more"}, want: nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, a.UnofferedToolPolicies(tt.offered)); diff != "" {
			t.Errorf("UnofferedToolPolicies(%q) (-want +got):\n%s", tt.offered, diff)
		}
	}
	withMCP := &Agent{MCP: []string{"files"}, ToolPolicies: map[string]ToolPolicy{"files__write": {}, "filesystem": {}}}
	if diff := cmp.Diff([]string{"filesystem"}, withMCP.UnofferedToolPolicies([]string{"x"})); diff != "" {
		t.Errorf("a policy for an MCP server's tool is never unoffered (-want +got):\n%s", diff)
	}
	if got := (&Agent{}).UnofferedToolPolicies([]string{"x"}); got != nil {
		t.Errorf("an agent without tool_policies: %q, want nil", got)
	}
}

func TestLookups(t *testing.T) {
	cfg, err := Load("testdata/dev.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := cfg.Agent("orders"); !ok || a.FlowType != "OrdersAgent" {
		t.Errorf(`Agent("orders") = %v, %v`, a, ok)
	}
	if a, ok := cfg.AgentByFlowType("OrdersAgent"); !ok || a.Name != "orders" {
		t.Errorf(`AgentByFlowType("OrdersAgent") = %v, %v`, a, ok)
	}
	if a, ok := cfg.Agent("missing"); ok || a != nil {
		t.Errorf(`Agent("missing") = %v, %v`, a, ok)
	}
	if a, ok := cfg.AgentByFlowType("ordersagent"); ok || a != nil {
		t.Errorf(`AgentByFlowType("ordersagent") = %v, %v; flow types are case-sensitive`, a, ok)
	}
	// The pointer refers to the config's own agent.
	a, _ := cfg.Agent("orders")
	a.Runner = "changed"
	if cfg.Agents[0].Runner != "changed" {
		t.Error("Agent returned a copy")
	}
}

func TestRunnerConfigJSONSorted(t *testing.T) {
	a := &Agent{RunnerConfig: map[string]any{
		"zeta": 1, "alpha": map[string]any{"y": true, "b": []any{"x", map[string]any{"k2": 1, "k1": nil}}}, "mid": "m",
	}}
	want := `{"alpha":{"b":["x",{"k1":null,"k2":1}],"y":true},"mid":"m","zeta":1}`
	for range 20 {
		got, err := a.RunnerConfigJSON()
		if err != nil || string(got) != want {
			t.Fatalf("RunnerConfigJSON() = %s, %v; want %s", got, err, want)
		}
	}
}

func TestErrorLimits(t *testing.T) {
	// An alias bomb stops at the node budget instead of expanding.
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	doc := "agents:\n  - name: a\n    flow_type: A\n    runner: p\n    runner_config: {bomb: *a8}\nplugins: {p: {command: x}}\n"
	// (The budget bounds the work; a timed assertion would flake on a
	// loaded machine.)
	_, err := LoadBytes([]byte("x-anchors:\n  "+strings.ReplaceAll(b.String(), "\n", "\n  ")+"\n"+doc), "")
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Errorf("alias bomb: error = %v", err)
	}

	// Many problems are cut off.
	var many strings.Builder
	for i := range 300 {
		fmt.Fprintf(&many, "unknown%d: 1\n", i)
	}
	_, err = LoadBytes([]byte(many.String()), "")
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Errors) != maxErrors+1 {
		t.Fatalf("error = %v", err)
	}
	if !strings.Contains(err.Error(), "too many problems") {
		t.Errorf("error does not say it stopped:\n%s", err)
	}
}

func TestParentPath(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"temporal", ""},
		{"temporal.tls.cert_file", "temporal.tls"},
		{"agents[0]", "agents"},
		{"agents[0].name", "agents[0]"},
		{`plugins["a.b[0]"]`, "plugins"},
		{`plugins["a\".b"].command`, `plugins["a\".b"]`},
		{`agents[1].tool_policies[""].effect`, `agents[1].tool_policies[""]`},
	} {
		if got := parentPath(tt.path); got != tt.want {
			t.Errorf("parentPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestMessageStore checks the message_store section: absent, its
// defaults, path resolution, the DSN read from the environment, and the
// three cases of retained_message_limit.
func TestMessageStore(t *testing.T) {
	const base = "plugins: {p: {command: x}}\nagents: [{name: a, flow_type: A, runner: p}]\n"
	cfg, err := LoadBytes([]byte(base), "/etc/dex")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MessageStore != nil {
		t.Errorf("message_store without the section = %+v, want nil", cfg.MessageStore)
	}

	t.Setenv("DEX_TEST_DATA", "/var/lib/dex")
	for _, tt := range []struct {
		doc  string
		want MessageStore
	}{
		{"message_store: {path: messages.db}", MessageStore{Driver: "sqlite", Path: "/etc/dex/messages.db", CacheBytes: 256 << 20}},
		{"message_store: {path: ../data/m.db, cache_bytes: 0}", MessageStore{Driver: "sqlite", Path: "/etc/data/m.db"}},
		{"message_store:\n  path: ${DEX_TEST_DATA}/messages.db", MessageStore{Driver: "sqlite", Path: "/var/lib/dex/messages.db", CacheBytes: 256 << 20}},
		{"message_store:\n  driver: sqlite\n  path: ${DEX_TEST_UNSET:-.dex}/messages.db", MessageStore{Driver: "sqlite", Path: "/etc/dex/.dex/messages.db", CacheBytes: 256 << 20}},
	} {
		cfg, err := LoadBytes([]byte(base+tt.doc), "/etc/dex")
		if err != nil {
			t.Errorf("%s: %v", tt.doc, err)
			continue
		}
		if diff := cmp.Diff(&tt.want, cfg.MessageStore); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.doc, diff)
		}
	}

	const dsn = "postgres://dex:pw-LEAKED-dsn@db/dex"
	t.Setenv("DEX_TEST_DSN", dsn)
	cfg, err = LoadBytes([]byte(base+"message_store: {driver: postgres, dsn_env: DEX_TEST_DSN}"), "/etc/dex")
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.MessageStore.DSN()
	if err != nil || got.Reveal() != dsn {
		t.Errorf("DSN() = %q, %v", got.Reveal(), err)
	}
	red, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if shown := string(red) + fmt.Sprintf("%v %+v", cfg, got); strings.Contains(shown, "pw-LEAKED") {
		t.Errorf("the DSN is shown:\n%s", shown)
	}
	t.Setenv("DEX_TEST_DSN", "")
	if _, err := cfg.MessageStore.DSN(); err == nil || !strings.Contains(err.Error(), "DEX_TEST_DSN is not set") {
		t.Errorf("DSN() of an unset variable: %v", err)
	}
	_, err = LoadBytes([]byte(base+"message_store: {driver: postgres}"), "")
	if want := "line 3: message_store.dsn_env: is required: the environment variable that holds the DSN"; err == nil || err.Error() != want {
		t.Errorf("postgres without dsn_env: %v, want %q", err, want)
	}

	for _, tt := range []struct {
		value string
		want  MessageLimit
	}{
		{"", MessageLimit{N: 1000}}, // absent: the default
		{"retained_message_limit: null", MessageLimit{Unlimited: true}},
		{"retained_message_limit: ~", MessageLimit{Unlimited: true}},
		{"retained_message_limit: 1", MessageLimit{N: 1}},
		{"retained_message_limit: 250000", MessageLimit{N: 250000}},
	} {
		doc := "plugins: {p: {command: x}}\nagents:\n  - {name: a, flow_type: A, runner: p}\n  - name: b\n    flow_type: B\n    runner: p\n    " + tt.value + "\n"
		cfg, err := LoadBytes([]byte(doc), "")
		if err != nil {
			t.Errorf("%q: %v", tt.value, err)
			continue
		}
		if got := cfg.Agents[1].RetainedMessageLimit; got != tt.want {
			t.Errorf("%q: %+v, want %+v", tt.value, got, tt.want)
		}
		if got := cfg.Agents[0].RetainedMessageLimit; got != (MessageLimit{N: 1000}) {
			t.Errorf("%q: the other agent got %+v", tt.value, got)
		}
		// The resolved config says the same.
		red, err := cfg.Redacted()
		if err != nil {
			t.Fatal(err)
		}
		again, err := LoadBytes(red, "")
		if err != nil {
			t.Fatalf("%q: loading the resolved config: %v\n%s", tt.value, err, red)
		}
		if got := again.Agents[1].RetainedMessageLimit; got != tt.want {
			t.Errorf("%q: reloaded as %+v, want %+v\n%s", tt.value, got, tt.want, red)
		}
	}
}

// TestMCPSecretsAreRedactionValues: an MCP server's header values and the
// values of the variables its env grants are among the secrets the worker
// redacts.
func TestMCPSecretsAreRedactionValues(t *testing.T) {
	t.Setenv("DEX_TEST_MCP_TOKEN", "mcp-LEAKED-token")
	t.Setenv("DEX_TEST_MCP_ENV", "mcp-LEAKED-env")
	cfg, err := LoadBytes([]byte(`
plugins: {p: {command: x}}
mcp_servers:
  web: {url: "https://h/mcp", headers: {Authorization: "Bearer ${DEX_TEST_MCP_TOKEN}"}}
  std: {command: x, env: [DEX_TEST_MCP_ENV, HOME]}
agents:
  - {name: a, flow_type: A, runner: p, mcp: [web, std]}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	values := strings.Join(cfg.SecretValues(), " ")
	for _, want := range []string{"Bearer mcp-LEAKED-token", "mcp-LEAKED-env"} {
		if !strings.Contains(values, want) {
			t.Errorf("SecretValues lack %q: %q", want, values)
		}
	}
	if !slices.Contains(cfg.SecretValues(), "mcp-LEAKED-token") {
		t.Errorf("SecretValues lack the bearer token alone: %q", values)
	}
	if home := os.Getenv("HOME"); home != "" && slices.Contains(cfg.SecretValues(), home) {
		t.Errorf("HOME's value is redacted: %q", values)
	}
	var b bytes.Buffer
	if err := yaml.NewEncoder(&b).Encode(cfg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "LEAKED") {
		t.Errorf("the config's YAML shows a secret:\n%s", b.String())
	}
}

// The connection strings and the resume token key read from the
// environment are redaction values, and so are the passwords in them.
func TestConnectionSecretsAreRedactionValues(t *testing.T) {
	setTestEnv(t)
	cfg, err := LoadBytes([]byte(`
events: {backend: redis, url_env: DEX_TEST_REDIS_URL, token_key_env: DEX_TEST_EVENTS_KEY}
message_store: {driver: postgres, dsn_env: DEX_TEST_MESSAGE_STORE_DSN}
plugins: {p: {command: x}}
agents: [{name: a, flow_type: A, runner: p}]
`), "")
	if err != nil {
		t.Fatal(err)
	}
	values := cfg.SecretValues()
	for _, want := range []string{testEnv["DEX_TEST_REDIS_URL"], "pw-LEAKED-redis", testEnv["DEX_TEST_MESSAGE_STORE_DSN"], "pw-LEAKED-dsn", testEnv["DEX_TEST_EVENTS_KEY"]} {
		if !slices.Contains(values, want) {
			t.Errorf("SecretValues lack %q: %q", want, values)
		}
	}
}

func TestParseHeaders(t *testing.T) {
	got, err := ParseHeaders("api-key=s3cr%3Dt, x-team = core ,,")
	if err != nil || len(got) != 2 || got["api-key"] != "s3cr=t" || got["x-team"] != "core" {
		t.Fatalf("ParseHeaders = %v, %v", got, err)
	}
	_, err = ParseHeaders("good=1,secret-value-without-key")
	if err == nil || strings.Contains(err.Error(), "secret-value") || !strings.Contains(err.Error(), "pair 2") {
		t.Fatalf("a bad pair: %v (it must name the pair, not quote it)", err)
	}
}

func TestWorkerMaxCachedWorkflows(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		path := filepath.Join(dir, "dex.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base := "plugins: {p: {command: dex-runner}}\nagents: [{name: a, flow_type: A, runner: p}]\n"
	cfg, err := Load(write(base + "worker: {max_cached_workflows: 2000}\n"))
	if err != nil || cfg.Worker.MaxCachedWorkflows != 2000 {
		t.Fatalf("Load = %+v, %v", cfg.Worker, err)
	}
	if cfg, err := Load(write(base)); err != nil || cfg.Worker.MaxCachedWorkflows != 0 {
		t.Fatalf("without worker: %+v, %v", cfg.Worker, err)
	}
	_, err = Load(write(base + "worker: {max_cached_workflows: -1}\n"))
	if err == nil || !strings.Contains(err.Error(), "worker.max_cached_workflows: must be >= 0") {
		t.Fatalf("a negative bound: %v", err)
	}
}
