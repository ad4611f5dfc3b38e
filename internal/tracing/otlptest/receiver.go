// Package otlptest is an OTLP trace receiver for tests: it takes the
// exports of OpenTelemetry SDKs over gRPC and over HTTP (protobuf), as a
// collector would, and keeps the spans for assertions.
//
//	r := otlptest.Start(t)
//	// export to r.GRPCEndpoint() or r.HTTPEndpoint()
//	spans := r.Spans()
package otlptest

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Kind                      tracepb.Span_SpanKind
	Start, End                time.Time
	Attributes                map[string]string
	// Service is the resource's service.name: which process sent it.
	Service string
	// Scope is the instrumentation scope's name.
	Scope      string
	StatusCode tracepb.Status_StatusCode
	StatusText string
	// Links are the span IDs of the linked spans, as trace/span.
	Links []string
}

// Receiver is a running receiver.
type Receiver struct {
	collectorpb.UnimplementedTraceServiceServer
	grpcAddr, httpAddr string

	mu    sync.Mutex
	spans []Span
}

// Start starts a receiver on two loopback ports; it stops with the test.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.grpcAddr, r.httpAddr = gl.Addr().String(), hl.Addr().String()
	gs := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(gs, r)
	go func() { _ = gs.Serve(gl) }()
	hs := &http.Server{Handler: http.HandlerFunc(r.serveHTTP), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(hl) }()
	t.Cleanup(func() {
		gs.Stop()
		_ = hs.Close()
	})
	return r
}

// GRPCEndpoint is the OTLP/gRPC endpoint URL (plain text).
func (r *Receiver) GRPCEndpoint() string { return "http://" + r.grpcAddr }

// HTTPEndpoint is the OTLP/HTTP endpoint URL, /v1/traces.
func (r *Receiver) HTTPEndpoint() string { return "http://" + r.httpAddr + "/v1/traces" }

// Export implements the OTLP trace service.
func (r *Receiver) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	r.add(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg)
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) add(req *collectorpb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Name: s.GetName(), Kind: s.GetKind(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attributes: attrs(s.GetAttributes()), Service: service, Scope: ss.GetScope().GetName(),
					StatusCode: s.GetStatus().GetCode(), StatusText: s.GetStatus().GetMessage(),
				}
				if p := s.GetParentSpanId(); len(p) > 0 {
					sp.ParentID = hex.EncodeToString(p)
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, hex.EncodeToString(l.GetTraceId())+"/"+hex.EncodeToString(l.GetSpanId()))
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
}

// attrs flattens attributes to strings (arrays as their JSON-ish text).
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.GetKey()] = valueString(kv.GetValue())
	}
	return out
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		s := "["
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				s += ","
			}
			s += valueString(e)
		}
		return s + "]"
	}
	return ""
}

// Spans returns a copy of every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Trace returns the spans of one trace.
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// WellFormed reports what is wrong with a trace as one: it needs exactly
// one root, no two spans with one ID, every other span's parent in the
// trace, and no span that ends before it starts. "" means well formed.
func WellFormed(spans []Span) string {
	ids := map[string]bool{}
	roots := 0
	for _, s := range spans {
		if ids[s.SpanID] {
			return "span " + s.SpanID + " (" + s.Name + ") is there twice"
		}
		ids[s.SpanID] = true
		if s.ParentID == "" {
			roots++
		}
		if s.End.Before(s.Start) {
			return "span " + s.Name + " ends before it starts"
		}
	}
	if roots != 1 {
		return "the trace has " + strconv.Itoa(roots) + " roots, want 1"
	}
	for _, s := range spans {
		if s.ParentID != "" && !ids[s.ParentID] {
			return "span " + s.Name + " (" + s.Service + ") has parent " + s.ParentID + ", which is not in the trace"
		}
	}
	return ""
}
