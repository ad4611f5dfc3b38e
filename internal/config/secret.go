package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Secret is a string that never shows its value when it is printed,
// marshalled to JSON or YAML, or logged with slog: all of them give
// "<secret>" (or "" for an empty Secret). Call Reveal to use the value.
type Secret string

const redacted = "<secret>"

// Reveal returns the secret value.
func (s Secret) Reveal() string { return string(s) }

// String returns "<secret>", or "" when s is empty.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString hides the value from the %#v verb.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.String()) }

// MarshalJSON encodes s as the JSON string "<secret>".
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalYAML encodes s as the YAML string "<secret>".
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// LogValue hides the value from slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Interface guards
var (
	_ fmt.Stringer   = Secret("")
	_ fmt.GoStringer = Secret("")
	_ json.Marshaler = Secret("")
	_ yaml.Marshaler = Secret("")
	_ slog.LogValuer = Secret("")
)

// SecretValues returns every secret value the worker knows of, for a
// redactor: the values of the environment variables granted to plugins
// and to MCP servers (read now), MCP servers' headers, the Temporal API key and the HTTP API tokens. Empty values
// are left out.
func (c *Config) SecretValues() []string {
	var out []string
	add := func(v string) {
		if v != "" {
			out = append(out, v)
		}
	}
	addEnv := func(names []string) {
		for _, env := range names {
			if !slices.Contains(NotSecretEnv, env) {
				v, _ := os.LookupEnv(env)
				add(v)
			}
		}
	}
	for _, name := range sortedKeys(c.Plugins) {
		addEnv(c.Plugins[name].Env)
	}
	for _, name := range sortedKeys(c.MCPServers) {
		m := c.MCPServers[name]
		addEnv(m.Env)
		for _, h := range sortedKeys(m.Headers) {
			v := m.Headers[h].Reveal()
			add(v)
			// "Bearer <token>": the token alone may show up too.
			if _, tok, ok := strings.Cut(v, " "); ok {
				add(tok)
			}
		}
	}
	add(c.Temporal.APIKey.Reveal())
	for _, t := range c.HTTP.Auth.Tokens {
		add(t.Value())
	}
	// The connection strings read from the environment, and the passwords
	// in them alone (a driver's error may quote either).
	addURL := func(name string) {
		if name == "" {
			return
		}
		v := os.Getenv(name)
		add(v)
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				add(pw)
			}
		}
	}
	if m := c.MessageStore; m != nil {
		addURL(m.DSNEnv)
	}
	addURL(c.Events.URLEnv)
	if c.Events.TokenKeyEnv != "" {
		add(os.Getenv(c.Events.TokenKeyEnv))
	}
	// The keys that sign approvals and approval links.
	if d := c.ApprovalDigest; d != nil {
		addEnv(append([]string{d.KeyEnv}, d.PreviousKeyEnvs...))
	}
	if l := c.ApprovalLinks; l != nil {
		addEnv(append([]string{l.KeyEnv}, l.PreviousKeyEnvs...))
	}
	// Notification channels' secrets, and URLs read from the environment
	// (a Slack incoming webhook's URL is its secret).
	if n := c.Notifications; n != nil {
		for _, name := range sortedKeys(n.Channels) {
			ch := n.Channels[name]
			addEnv([]string{ch.SecretEnv, ch.URLEnv})
			if ch.SMTP != nil {
				addEnv([]string{ch.SMTP.PasswordEnv})
			}
		}
	}
	return out
}

// NotSecretEnv are environment variables a plugin or an MCP server is
// often granted whose values are not secrets: redacting them (a home
// directory, say) would garble every path in an error.
var NotSecretEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TMPDIR", "LANG", "LC_ALL", "TZ", "TERM", "NODE_ENV"}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
