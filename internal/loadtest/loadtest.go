// Package loadtest drives a running deployment through its HTTP API, the
// way browsers do: each session is started, followed on its event stream,
// and sent its turns one after the other; a turn lasts from the send to
// its turn_completed event. It reports turns per second and the latency
// percentiles of whole turns and of send -> first text_delta.
//
//	res, err := loadtest.Run(ctx, loadtest.Options{
//		BaseURL: "http://127.0.0.1:8080", Token: token, Agent: "echo",
//		Sessions: 100, Concurrency: 20, Turns: 5,
//	})
//	fmt.Println(res)
package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/httpclient/sse"
)

// Options configure a run.
type Options struct {
	// BaseURL is the API's address, such as http://127.0.0.1:8080.
	BaseURL string
	// Token is a bearer token that may start sessions of Agent.
	Token string
	// Agent is the agent of every session (an agent with a scripted model,
	// such as dev's echo, measures the worker rather than a provider).
	Agent string
	// Sessions is how many sessions run in all, Concurrency how many at
	// once, and Turns how many turns each runs.
	Sessions, Concurrency, Turns int
	// Message is each turn's text (default "hello").
	Message string
	// TurnTimeout fails a turn that takes longer (default 2m).
	TurnTimeout time.Duration
	// Client sends the requests; nil means a client for this run.
	Client *http.Client
}

// Percentiles of a latency (in JSON, nanoseconds).
type Percentiles struct {
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// Result is what a run measured.
type Result struct {
	Sessions       int           `json:"sessions"`
	Turns          int           `json:"turns"` // completed
	FailedTurns    int           `json:"failed_turns"`
	Elapsed        time.Duration `json:"elapsed_ns"`
	TurnsPerSecond float64       `json:"turns_per_second"`
	// Turn is send -> turn_completed; FirstDelta is send -> the turn's
	// first text_delta.
	Turn       Percentiles `json:"turn_latency"`
	FirstDelta Percentiles `json:"first_text_delta_latency"`
	// Errors are the first few failures, for the report.
	Errors []string `json:"errors,omitempty"`
	// Series is, for a run of one session, the latency of each of its
	// turns in order, so a driver can compare its late turns with its
	// early ones (the cost of a session's depth).
	Series []time.Duration `json:"turn_series_ns,omitempty"`
}

func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sessions, %d turns (%d failed) in %s: %.1f turns/s\n", r.Sessions, r.Turns, r.FailedTurns, r.Elapsed.Round(time.Millisecond), r.TurnsPerSecond)
	fmt.Fprintf(&b, "turn latency             p50 %s  p99 %s  max %s\n", ms(r.Turn.P50), ms(r.Turn.P99), ms(r.Turn.Max))
	fmt.Fprintf(&b, "send -> first text_delta p50 %s  p99 %s  max %s\n", ms(r.FirstDelta.P50), ms(r.FirstDelta.P99), ms(r.FirstDelta.Max))
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// Run runs the load and returns what it measured. It fails only when
// nothing could run (a wrong address or token); failed turns are counted.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.BaseURL == "" || o.Token == "" || o.Agent == "" {
		return Result{}, errors.New("loadtest: the API address, a token and an agent are required")
	}
	if o.Sessions < 1 || o.Concurrency < 1 || o.Turns < 1 {
		return Result{}, fmt.Errorf("loadtest: sessions (%d), concurrency (%d) and turns (%d) must be at least 1", o.Sessions, o.Concurrency, o.Turns)
	}
	if o.Message == "" {
		o.Message = "hello"
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = 2 * time.Minute
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.Concurrency}}
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	var runID [4]byte
	_, _ = rand.Read(runID[:])
	prefix := "load-" + hex.EncodeToString(runID[:])

	var (
		mu     sync.Mutex
		res    = Result{Sessions: o.Sessions}
		turns  []time.Duration
		deltas []time.Duration
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.Errors) < 5 {
			res.Errors = append(res.Errors, err.Error())
		}
	}
	start := time.Now()
	sem := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	for i := range o.Sessions {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case sem <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s := &session{o: o, id: fmt.Sprintf("%s-%d", prefix, i)}
			t, d, failed, err := s.run(ctx)
			mu.Lock()
			turns = append(turns, t...)
			deltas = append(deltas, d...)
			res.FailedTurns += failed
			mu.Unlock()
			if err != nil {
				fail(fmt.Errorf("session %s: %w", s.id, err))
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Turns = len(turns)
	if res.Elapsed > 0 {
		res.TurnsPerSecond = float64(res.Turns) / res.Elapsed.Seconds()
	}
	res.Turn, res.FirstDelta = percentiles(turns), percentiles(deltas)
	if o.Sessions == 1 {
		res.Series = turns
	}
	if res.Turns == 0 && len(res.Errors) > 0 {
		return res, fmt.Errorf("loadtest: no turn completed: %s", res.Errors[0])
	}
	return res, nil
}

func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.5) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Percentiles{P50: at(0.50), P99: at(0.99), Max: s[len(s)-1]}
}

// session is one session of the run.
type session struct {
	o  Options
	id string
}

// frame is what the load test reads of an event.
type frame struct {
	Type   string `json:"type"`
	TurnID string `json:"turn_id"`
	at     time.Time
}

func (s *session) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.o.BaseURL+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.o.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(out))
	}
	return out, nil
}

// run starts the session, follows its events and runs its turns; it
// returns the latencies of the completed turns, and the number that failed.
func (s *session) run(ctx context.Context) (turns, deltas []time.Duration, failed int, err error) {
	if _, err := s.do(ctx, "POST", "/v1/sessions", map[string]string{"agent": s.o.Agent, "session_id": s.id}); err != nil {
		return nil, nil, s.o.Turns, err
	}
	body, err := s.do(ctx, "GET", "/v1/sessions/"+s.id+"/snapshot", nil)
	if err != nil {
		return nil, nil, s.o.Turns, err
	}
	var snap struct {
		ResumeToken string `json:"resume_token"`
	}
	if err := json.Unmarshal(body, &snap); err != nil {
		return nil, nil, s.o.Turns, fmt.Errorf("snapshot: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	frames := make(chan frame, 1024)
	streamErr := make(chan error, 1)
	go func() { streamErr <- s.follow(sctx, snap.ResumeToken, frames) }()
	for n := range s.o.Turns {
		t, d, err := s.turn(ctx, n, frames, streamErr)
		if err != nil {
			return turns, deltas, s.o.Turns - n, err
		}
		turns = append(turns, t)
		if d > 0 {
			deltas = append(deltas, d)
		}
	}
	_, err = s.do(ctx, "POST", "/v1/sessions/"+s.id+"/close", struct{}{})
	return turns, deltas, 0, err
}

// turn sends one message and waits for its turn to end.
func (s *session) turn(ctx context.Context, n int, frames <-chan frame, streamErr <-chan error) (time.Duration, time.Duration, error) {
	sent := time.Now()
	if _, err := s.do(ctx, "POST", "/v1/sessions/"+s.id+"/messages",
		map[string]string{"text": s.o.Message, "message_id": fmt.Sprintf("m%d", n)}); err != nil {
		return 0, 0, err
	}
	timeout := time.NewTimer(s.o.TurnTimeout)
	defer timeout.Stop()
	var first time.Duration
	for {
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case err := <-streamErr:
			return 0, 0, fmt.Errorf("the event stream ended: %w", err)
		case <-timeout.C:
			return 0, 0, fmt.Errorf("turn %d did not end within %s", n+1, s.o.TurnTimeout)
		case f := <-frames:
			switch f.Type {
			case wire.EventTextDelta:
				if first == 0 {
					first = f.at.Sub(sent)
				}
			case "turn_completed":
				return f.at.Sub(sent), first, nil
			case "turn_failed", "turn_cancelled":
				return 0, 0, fmt.Errorf("turn %d ended with %s", n+1, f.Type)
			}
		}
	}
}

// follow reads the session's event stream until ctx ends.
func (s *session) follow(ctx context.Context, token string, out chan<- frame) error {
	req, err := http.NewRequestWithContext(ctx, "GET", s.o.BaseURL+"/v1/sessions/"+s.id+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.o.Token)
	req.Header.Set("Last-Event-ID", token)
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET events: %d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	r := sse.NewReader(bufio.NewReader(resp.Body))
	for {
		ev, err := r.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var f frame
		if json.Unmarshal([]byte(ev.Data), &f) != nil {
			continue
		}
		f.at = time.Now()
		select {
		case out <- f:
		case <-ctx.Done():
			return nil
		}
	}
}
