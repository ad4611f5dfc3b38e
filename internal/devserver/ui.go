package devserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// uiServer runs the Temporal Web UI (ui-server v2) on 127.0.0.1.
//
// Caveat of ui-server v2.56.4: Start binds the port itself and calls
// os.Exit through its logger when binding fails. planPorts has just checked
// that the port is free, so this only happens if another process grabs the
// port in the few microseconds in between.
type uiServer struct {
	srv  *uiserver.Server
	done chan struct{} // closed when srv.Start returns
}

func startUI(ctx context.Context, port int, frontendAddr, namespace string) (*uiServer, error) {
	cfg := &uiconfig.Config{
		Host:                loopback,
		Port:                port,
		TemporalGRPCAddress: frontendAddr,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		// Plain HTTP on loopback: the CSRF cookie must not require TLS.
		CORS:             uiconfig.CORS{CookieInsecure: true},
		HideLogs:         true,
		DisableNewsFetch: true, // no calls to the internet
	}
	u := &uiServer{
		srv:  uiserver.NewServer(uiserveroptions.WithConfigProvider(cfg)),
		done: make(chan struct{}),
	}
	go func() {
		defer close(u.done)
		_ = u.srv.Start() // returns nil once stopped
	}()

	base := "http://" + hostPort(port)
	hc := &http.Client{Timeout: 2 * time.Second}
	err := poll(ctx, func(ctx context.Context) error {
		select {
		case <-u.done:
			return errors.New("UI server exited")
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		_ = u.stop()
		return nil, fmt.Errorf("devserver: Web UI on %s did not start: %w", base, err)
	}
	return u, nil
}

func (u *uiServer) stop() error {
	u.srv.Stop()
	select {
	case <-u.done:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("Web UI did not stop within 5s")
	}
}
