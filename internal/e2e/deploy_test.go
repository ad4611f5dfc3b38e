package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

// deployEnv names the environment variables of deploy/config.yaml, by what
// they hold.
type deployEnv struct {
	Temporal, RedisURL, TokenKey, DSN, APIToken string
}

func (e deployEnv) names() []string {
	return []string{e.Temporal, e.RedisURL, e.TokenKey, e.DSN, e.APIToken}
}

var envRef = regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)(:-[^}]*)?\}`)

// readDeployEnv reads the variable names from deploy/config.yaml.
func readDeployEnv(t testing.TB) deployEnv {
	t.Helper()
	raw, err := os.ReadFile(deployConfig)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Temporal struct{ Address string }
		Events   struct {
			URLEnv      string `yaml:"url_env"`
			TokenKeyEnv string `yaml:"token_key_env"`
		}
		MessageStore struct {
			DSNEnv string `yaml:"dsn_env"`
		} `yaml:"message_store"`
		HTTP struct {
			Auth struct {
				Tokens []struct{ Token string }
			}
		}
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ref := func(what, v string) string {
		m := envRef.FindStringSubmatch(v)
		if m == nil {
			t.Fatalf("deploy/config.yaml: %s %q is not from a ${VAR}", what, v)
		}
		return m[1]
	}
	if len(doc.HTTP.Auth.Tokens) != 1 {
		t.Fatalf("deploy/config.yaml has %d API tokens, want 1", len(doc.HTTP.Auth.Tokens))
	}
	return deployEnv{
		Temporal: ref("temporal.address", doc.Temporal.Address),
		RedisURL: doc.Events.URLEnv, TokenKey: doc.Events.TokenKeyEnv, DSN: doc.MessageStore.DSNEnv,
		APIToken: ref("the API token", doc.HTTP.Auth.Tokens[0].Token),
	}
}

// TestDeployConfigLoads loads deploy/config.yaml as a worker would.
func TestDeployConfigLoads(t *testing.T) {
	env := readDeployEnv(t)
	t.Setenv(env.RedisURL, "redis://redis:6379/0")
	t.Setenv(env.TokenKey, "deploy-test-events-key-0123456789")
	t.Setenv(env.DSN, "postgres://dex@postgresql:5432/dex")
	t.Setenv(env.APIToken, "deploy-test-api-token-0123456789")
	cfg, err := config.Load(deployConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Events.Backend != config.EventsRedis || cfg.MessageStore == nil || cfg.MessageStore.Driver != config.MessageStorePostgres {
		t.Fatalf("deploy/config.yaml: events %q, message store %+v: want redis and postgres (the api role needs both)", cfg.Events.Backend, cfg.MessageStore)
	}
	if cfg.Temporal.Address != "temporal:7233" {
		t.Fatalf("temporal.address defaults to %q, want the compose service temporal:7233", cfg.Temporal.Address)
	}
}

// dexProcess is a worker or API process of a recipe.
type dexProcess struct {
	where string
	args  []string
	env   []string
	probe int // the port /readyz answers on, 0 if none
	grace time.Duration
}

// TestDeployFilesMatchTheClusterTest checks the compose file and the
// Kubernetes manifests against the topology the cluster test runs as
// processes: the same arguments for each role, the variables
// deploy/config.yaml reads, readiness on /readyz at the --http port, and a
// grace period above shutdown_timeout.
func TestDeployFilesMatchTheClusterTest(t *testing.T) {
	t.Parallel()
	env := readDeployEnv(t)
	raw, err := os.ReadFile(deployConfig)
	if err != nil {
		t.Fatal(err)
	}
	var cfgDoc struct {
		ShutdownTimeout string `yaml:"shutdown_timeout"`
	}
	if err := yaml.Unmarshal(raw, &cfgDoc); err != nil {
		t.Fatal(err)
	}
	shutdown, err := time.ParseDuration(cfgDoc.ShutdownTimeout)
	if err != nil {
		t.Fatalf("deploy/config.yaml shutdown_timeout: %v", err)
	}
	procs := append(composeProcesses(t), kubernetesProcesses(t)...)
	roles := map[string]int{}
	for _, p := range procs {
		if len(p.args) != 7 {
			t.Errorf("%s: arguments %q, want %q", p.where, p.args, roleArgs("CONFIG", "ROLE", "ADDR"))
			continue
		}
		role, listen := p.args[4], p.args[6]
		if want := roleArgs("/etc/dex-agent-worker/config.yaml", role, listen); !slices.Equal(p.args, want) {
			t.Errorf("%s: arguments %q, want %q", p.where, p.args, want)
		}
		if role != "worker" && role != "api" {
			t.Errorf("%s: role %q", p.where, role)
		}
		roles[p.where[:strings.Index(p.where, ":")]+" "+role]++
		for _, name := range env.names() {
			if !slices.Contains(p.env, name) {
				t.Errorf("%s: no %s in its environment (deploy/config.yaml reads it)", p.where, name)
			}
		}
		if !strings.HasPrefix(listen, "0.0.0.0:") {
			t.Errorf("%s: --http %s: a container must listen beyond loopback", p.where, listen)
		}
		if p.probe != 0 && fmt.Sprint(p.probe) != listen[strings.LastIndex(listen, ":")+1:] {
			t.Errorf("%s: readiness on port %d, but --http is %s", p.where, p.probe, listen)
		}
		if role == "worker" && p.grace != 0 && p.grace <= shutdown {
			t.Errorf("%s: grace period %s is not above shutdown_timeout %s: SIGTERM could not drain the Steps", p.where, p.grace, shutdown)
		}
	}
	want := map[string]int{"compose worker": 2, "compose api": 1, "kubernetes worker": 1, "kubernetes api": 1}
	for k, n := range want {
		if roles[k] != n {
			t.Errorf("%s: %d processes, want %d (all: %v)", k, roles[k], n, roles)
		}
	}
}

// composeProcesses reads the dex services of deploy/docker-compose.yml,
// with the Dockerfile's entrypoint before their command.
func composeProcesses(t *testing.T) []dexProcess {
	t.Helper()
	entry := dockerEntrypoint(t)
	raw, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image           string            `yaml:"image"`
			Command         []string          `yaml:"command"`
			Environment     map[string]string `yaml:"environment"`
			StopGracePeriod string            `yaml:"stop_grace_period"`
			Volumes         []string          `yaml:"volumes"`
		}
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"temporal", "temporal-ui", "postgresql", "redis"} {
		if _, ok := doc.Services[svc]; !ok {
			t.Errorf("docker-compose.yml has no %s service", svc)
		}
	}
	var out []dexProcess
	for name, s := range doc.Services {
		if !strings.HasPrefix(s.Image, "dex-agent-worker") {
			continue
		}
		p := dexProcess{where: "compose:" + name, args: append(append([]string(nil), entry[1:]...), s.Command...)}
		for k := range s.Environment {
			p.env = append(p.env, k)
		}
		if s.StopGracePeriod != "" {
			if p.grace, err = time.ParseDuration(s.StopGracePeriod); err != nil {
				t.Errorf("%s: stop_grace_period: %v", p.where, err)
			}
		} else {
			p.grace = 10 * time.Second // Docker's default
		}
		if !slices.Contains(s.Volumes, "./config.yaml:/etc/dex-agent-worker/config.yaml:ro") {
			t.Errorf("%s: deploy/config.yaml is not mounted at /etc/dex-agent-worker/config.yaml", p.where)
		}
		out = append(out, p)
	}
	return out
}

// dockerEntrypoint reads the ENTRYPOINT of the repository's Dockerfile.
func dockerEntrypoint(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "ENTRYPOINT "); ok {
			var entry []string
			if err := yaml.Unmarshal([]byte(rest), &entry); err != nil {
				t.Fatalf("Dockerfile ENTRYPOINT: %v", err)
			}
			if len(entry) == 0 || !strings.HasSuffix(entry[0], "/dex-agent-worker") {
				t.Fatalf("Dockerfile ENTRYPOINT %q does not run dex-agent-worker", entry)
			}
			return entry
		}
	}
	t.Fatal("the Dockerfile has no ENTRYPOINT")
	return nil
}

// kubernetesProcesses reads the Deployments of deploy/kubernetes.
func kubernetesProcesses(t *testing.T) []dexProcess {
	t.Helper()
	var out []dexProcess
	for _, file := range []string{"worker.yaml", "api.yaml"} {
		raw, err := os.ReadFile("../../deploy/kubernetes/" + file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc struct {
				Kind     string
				Metadata struct{ Name string }
				Spec     struct {
					Template struct {
						Spec struct {
							TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
							Containers                    []struct {
								Command        []string
								Args           []string
								Env            []struct{ Name string }
								ReadinessProbe struct {
									HTTPGet struct {
										Path string
										Port int
									} `yaml:"httpGet"`
								} `yaml:"readinessProbe"`
							}
						}
					}
				}
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if doc.Kind != "Deployment" {
				continue
			}
			ps := doc.Spec.Template.Spec
			for _, c := range ps.Containers {
				p := dexProcess{where: "kubernetes:" + doc.Metadata.Name, args: c.Args, probe: c.ReadinessProbe.HTTPGet.Port, grace: 30 * time.Second}
				if len(c.Command) != 1 || !strings.HasSuffix(c.Command[0], "/dex-agent-worker") {
					t.Errorf("%s: command %q does not run dex-agent-worker", p.where, c.Command)
				}
				if c.ReadinessProbe.HTTPGet.Path != "/readyz" {
					t.Errorf("%s: readiness probe %q, want /readyz", p.where, c.ReadinessProbe.HTTPGet.Path)
				}
				if g := ps.TerminationGracePeriodSeconds; g != nil {
					p.grace = time.Duration(*g) * time.Second
				}
				for _, e := range c.Env {
					p.env = append(p.env, e.Name)
				}
				out = append(out, p)
			}
		}
	}
	return out
}
