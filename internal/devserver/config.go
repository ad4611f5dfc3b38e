package devserver

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
)

const (
	loopback    = "127.0.0.1"
	clusterName = "active"
	// namespaceRefreshInterval is how often each service reloads namespace
	// records (server default 2 s).
	namespaceRefreshInterval = time.Second
)

// servicePorts are the listen ports of one Temporal service.
type servicePorts struct {
	grpc       int
	membership int
}

// PortInUseError reports a fixed port that another process holds.
type PortInUseError struct {
	// What names the port: "frontend" or "Web UI".
	What string
	Port int
	Err  error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("devserver: %s port %d on %s is not available (already in use?): %v", e.What, e.Port, loopback, e.Err)
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// portPlan holds every port the server listens on.
type portPlan struct {
	frontend, history, matching, worker servicePorts
	ui                                  int // 0 = no UI
}

// planPorts checks that the caller's fixed ports are free and picks free
// loopback ports for the rest. All probe listeners are held until every port
// is chosen, so no port is handed out twice.
func planPorts(frontendPort, uiPort int) (portPlan, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	// reserve holds a port until the plan is made: the given one, or for 0
	// a FreePort (another if someone took it since).
	reserve := func(what string, port int) (int, error) {
		if port != 0 {
			l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
			if err != nil {
				return 0, &PortInUseError{What: what, Port: port, Err: err}
			}
			held = append(held, l)
			return port, nil
		}
		var lastErr error
		for range 20 {
			p, err := FreePort()
			if err != nil {
				return 0, fmt.Errorf("devserver: cannot pick a free port for %s: %w", what, err)
			}
			l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(p)))
			if err != nil {
				lastErr = err
				continue
			}
			held = append(held, l)
			return p, nil
		}
		return 0, fmt.Errorf("devserver: cannot pick a free port for %s: %w", what, lastErr)
	}

	var p portPlan
	var err error
	// Fixed ports first, so a free-port pick can never collide with them.
	if p.frontend.grpc, err = reserve("frontend", frontendPort); err != nil {
		return p, err
	}
	if uiPort != 0 {
		if p.ui, err = reserve("Web UI", uiPort); err != nil {
			return p, err
		}
	}
	for _, x := range []struct {
		name string
		dst  *int
	}{
		{"frontend membership", &p.frontend.membership},
		{"history", &p.history.grpc},
		{"history membership", &p.history.membership},
		{"matching", &p.matching.grpc},
		{"matching membership", &p.matching.membership},
		{"worker", &p.worker.grpc},
		{"worker membership", &p.worker.membership},
	} {
		if *x.dst, err = reserve(x.name, 0); err != nil {
			return p, err
		}
	}
	return p, nil
}

func hostPort(port int) string { return net.JoinHostPort(loopback, strconv.Itoa(port)) }

func serviceConfig(sp servicePorts) config.Service {
	return config.Service{RPC: config.RPC{
		GRPCPort:       sp.grpc,
		MembershipPort: sp.membership,
		BindOnIP:       loopback,
		// HTTPPort stays 0: the frontend's HTTP API is not needed (the Web UI
		// talks gRPC).
	}}
}

// serverConfig is the static Temporal server configuration: one history
// shard, SQLite for persistence and visibility, archival off, everything on
// the loopback interface.
func serverConfig(sqlCfg *config.SQL, ports portPlan) *config.Config {
	const store = "sqlite-default"
	cfg := &config.Config{}
	cfg.Global.Membership = config.Membership{
		MaxJoinDuration:  30 * time.Second,
		BroadcastAddress: loopback,
	}
	// Global.Metrics stays nil: the server then uses a no-op metrics handler
	// and opens no metrics listener. PProf.Port 0 = no pprof listener.
	cfg.Persistence = config.Persistence{
		DefaultStore:     store,
		VisibilityStore:  store,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{store: {SQL: sqlCfg}},
	}
	cfg.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             hostPort(ports.frontend.grpc),
			},
		},
	}
	cfg.DCRedirectionPolicy.Policy = "noop"
	cfg.Services = map[string]config.Service{
		string(primitives.FrontendService): serviceConfig(ports.frontend),
		string(primitives.HistoryService):  serviceConfig(ports.history),
		string(primitives.MatchingService): serviceConfig(ports.matching),
		string(primitives.WorkerService):   serviceConfig(ports.worker),
	}
	cfg.Archival.History.State = "disabled"
	cfg.Archival.Visibility.State = "disabled"
	cfg.NamespaceDefaults.Archival.History.State = "disabled"
	cfg.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The worker service's SDK client dials this address.
	cfg.PublicClient.HostPort = hostPort(ports.frontend.grpc)
	return cfg
}

// devQueuePollRPS is the poll rate of the one shard's task queue
// processors (see dynamicConfig).
const devQueuePollRPS = 1000

// dynamicConfig holds the dev-machine overrides; everything else keeps the
// server defaults.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// Visibility (List/Count workflows) is rate limited to 10 RPS per
		// namespace by default; the Web UI and test pollers exceed that easily.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// Refresh the namespace registry every second instead of every 2 s, so
		// a search attribute added to an existing namespace becomes usable
		// quickly. On SQLite this is one small query per service per second.
		dynamicconfig.NamespaceCacheRefreshInterval.Key(): namespaceRefreshInterval,

		// The engine has one history shard (NumHistoryShards), so the
		// per-shard poll rate of each task queue processor is the whole
		// machine's. At the default 20 polls/s, once its burst is spent
		// (about 50 turns after start), every workflow task that follows
		// an activity (transfer queue) waits up to 50 ms for the next poll:
		// a turn took 50 ms instead of 17. A cluster spreads sessions over
		// hundreds of shards and keeps the default.
		dynamicconfig.TransferProcessorMaxPollRPS.Key():   devQueuePollRPS,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():      devQueuePollRPS,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(): devQueuePollRPS,
		dynamicconfig.OutboundProcessorMaxPollRPS.Key():   devQueuePollRPS,

		// The worker service starts these system SDK workers but never stops
		// them (server v1.32.2: "Nothing is gracefully stopping these
		// workers"), so each of them would keep polling a dead frontend after
		// Stop, leaking ~100 goroutines per stopped server and logging
		// warnings. None is needed on a dev machine:
		//  - the task queue scanner deletes long-idle task queue rows;
		//  - the history scanner deletes orphaned history branches;
		//  - without the parent-close-policy worker, history applies parent
		//    close policies itself (inline) for any number of children.
		dynamicconfig.TaskQueueScannerEnabled.Key():       false,
		dynamicconfig.HistoryScannerEnabled.Key():         false,
		dynamicconfig.EnableParentClosePolicyWorker.Key(): false,
	}
}

// serverOptions assembles the temporal.NewServer options.
func serverOptions(cfg *config.Config, ports portPlan, logger *serverLogger) []temporal.ServerOption {
	static1 := func(sp servicePorts) static.Hosts { return static.SingleLocalHost(hostPort(sp.grpc)) }
	return []temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		// Static membership: without it every restart stalls workflow tasks for
		// ~50 s while ringpop waits out the previous run's (dead) members.
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static1(ports.frontend),
			primitives.HistoryService:  static1(ports.history),
			primitives.MatchingService: static1(ports.matching),
			primitives.WorkerService:   static1(ports.worker),
		}),
		temporal.WithLogger(logger),
		temporal.WithNamespaceLogger(logger),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper {
			return authorization.NewNoopClaimMapper()
		}),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	}
}
