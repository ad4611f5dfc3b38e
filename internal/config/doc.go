// Package config loads the YAML configuration of the dex-agent-worker
// daemon into one typed, validated Config. Code outside this package sees
// only the struct.
//
// Load reads a file, expands ${VAR} references from the environment,
// decodes it strictly, fills in defaults, resolves relative paths against
// the file's directory and calls Validate:
//
//	cfg, err := config.Load("/etc/dex/worker.yml")
//	if err != nil {
//		return err // every problem, one per line: file:line: key.path: message
//	}
//	agent, ok := cfg.AgentByFlowType(workflowType)
//	if !ok {
//		return fmt.Errorf("no agent runs workflow type %q", workflowType)
//	}
//	runnerConfig, err := agent.RunnerConfigJSON() // handed to the runner plugin
//	policy := agent.ResolveToolPolicy("refund_order", "")
//	logger.Info("config loaded", "temporal", cfg.Temporal.Address, "api_key", cfg.Temporal.APIKey) // api_key=<secret>
//
// A minimal file declares one runner plugin and one agent; everything else
// has a default:
//
//	plugins:
//	  stepwise:
//	    command: ../bin/dex-runner-stepwise # relative to this file; a bare name is looked up on PATH
//	    env: [OPENAI_API_KEY]               # the only variables the plugin sees
//	agents:
//	  - name: support
//	    flow_type: SupportAgent
//	    runner: stepwise
//	    runner_config: {model: gpt-5-mini}
//	    tool_policies:
//	      refund_order: {effect: non_idempotent_write, requires_approval: true}
//
// # Environment variables
//
// A string value may contain ${NAME}, or ${NAME:-default} which uses
// default when NAME is unset or empty; $$ is a literal $. References are
// expanded after the YAML is parsed and only in values, never in keys, so a
// variable holding YAML syntax stays one string. A reference to an unset
// variable without a default is an error. A plain (unquoted) value that is
// only a reference is typed after expansion, so maximum_attempts: ${N}
// works; quote it ("${N}") to keep a string in runner_config.
//
// # Errors
//
// Load and LoadBytes return a *ValidationError that lists every problem at
// once, each a *FieldError with the key path and line, such as
//
//	worker.yml:14: agents[1].tool_policies.refund.effect: unknown effect "write" (want read, idempotent_write, non_idempotent_write or unclassified)
//	worker.yml:9: agents[0].tool_policy: unknown key (did you mean "tool_policies"?)
//
// # Secrets
//
// Temporal.APIKey is a Secret: fmt, encoding/json, YAML and slog all show
// it as <secret>, and Reveal returns the value. Redacted prints the whole
// resolved configuration safely for logs.
package config
