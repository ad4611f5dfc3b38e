package client

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestDataConverterDoesNotEscapeHTML: a message of "<" characters costs one
// byte per character in a payload, and reads back; payloads of the default
// converter read back too.
func TestDataConverterDoesNotEscapeHTML(t *testing.T) {
	text := strings.Repeat("<a href=\"x\">&</a>", 10_000)
	in := wire.SendUserMessageRequest{Text: text}
	p, err := DataConverter().ToPayload(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(`{"text":""}`) + len(text) + strings.Count(text, `"`); len(p.GetData()) != want {
		t.Errorf("payload is %d bytes, want %d (no HTML escaping)", len(p.GetData()), want)
	}
	var out wire.SendUserMessageRequest
	if err := DataConverter().FromPayload(p, &out); err != nil || out.Text != text {
		t.Fatalf("round trip: %v", err)
	}
	old, err := converter.GetDefaultDataConverter().ToPayload(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(old.GetData()) <= len(p.GetData()) {
		t.Errorf("the default converter's payload (%d bytes) is not larger; the test proves nothing", len(old.GetData()))
	}
	out = wire.SendUserMessageRequest{}
	if err := DataConverter().FromPayload(old, &out); err != nil || out.Text != text {
		t.Fatalf("reading a default payload: %v", err)
	}
	if string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
		t.Errorf("encoding = %q", p.GetMetadata()[converter.MetadataEncoding])
	}
}
