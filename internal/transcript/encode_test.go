package transcript

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

func TestEncoding(t *testing.T) {
	m := Message{Sequence: 7, Role: pluginapi.RoleAssistant, Text: "a <b> & c", Item: `{"k":"<v>"}`, TurnID: "t1"}
	want := `{"sequence":7,"role":"assistant","text":"a <b> & c","framework_item":"{\"k\":\"<v>\"}","turn_id":"t1"}`
	if got := string(encodeMessage(&m)); got != want {
		t.Errorf("encodeMessage = %s\nwant %s", got, want)
	}
	if got := EncodedSize(m); got != len(want) {
		t.Errorf("EncodedSize = %d, want %d", got, len(want))
	}
	// encoding/json with its defaults escapes HTML: the store does not.
	escaped, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(escaped) != len(want)+5*5 {
		t.Errorf("json.Marshal is %d bytes, want %d (five <, > and &, each \\u003c: five bytes more)", len(escaped), len(want)+25)
	}
	data, ref, err := encodeChunk("s", []Message{m, {Sequence: 8, Role: pluginapi.RoleUser}})
	if err != nil {
		t.Fatal(err)
	}
	if wantChunk := "[" + want + `,{"sequence":8,"role":"user","text":""}]`; string(data) != wantChunk {
		t.Errorf("encodeChunk = %s\nwant %s", data, wantChunk)
	}
	if want := (ChunkRef{First: 7, Last: 8, Count: 2, Bytes: int64(len(data))}); ref != want {
		t.Errorf("ref = %+v, want %+v", ref, want)
	}
}

func TestDecodeChunkStrict(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		want       []Message // nil: ErrCorrupt
	}{
		{"one", `[{"sequence":1,"role":"user","text":"hi"}]`, []Message{{Sequence: 1, Role: "user", Text: "hi"}}},
		{"white space", " [ {\"sequence\":3,\"text\":\"\"} ,\n{\"sequence\":4,\"text\":\"x\"} ] \n", []Message{{Sequence: 3}, {Sequence: 4, Text: "x"}}},
		{"empty input", ``, nil},
		{"null", `null`, nil},
		{"an object", `{"sequence":1}`, nil},
		{"empty array", `[]`, nil},
		{"unknown field", `[{"sequence":1,"colour":"red"}]`, nil},
		{"wrong type", `[{"sequence":"1"}]`, nil},
		{"null element", `[null]`, nil},
		{"a number element", `[1]`, nil},
		{"zero sequence", `[{"sequence":0}]`, nil},
		{"negative sequence", `[{"sequence":-4}]`, nil},
		{"gap", `[{"sequence":1},{"sequence":3}]`, nil},
		{"repeat", `[{"sequence":1},{"sequence":1}]`, nil},
		{"data after", `[{"sequence":1}] [`, nil},
		{"two arrays", `[{"sequence":1}][{"sequence":2}]`, nil},
		{"not closed", `[{"sequence":1}`, nil},
		{"invalid UTF-8", "[{\"sequence\":1,\"text\":\"\xff\"}]", nil},
		{"overflow", `[{"sequence":9223372036854775808}]`, nil},
		{"last sequence", `[{"sequence":9223372036854775807}]`, []Message{{Sequence: 1<<63 - 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeChunk([]byte(tt.data))
			if tt.want == nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("decodeChunk(%q) = %v, %v; want ErrCorrupt", tt.data, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	for _, data := range []string{`{"sequence":1} {}`, `{"sequence":1,"x":1}`, `null`, `[]`, `{"sequence":0}`, "{\"sequence\":1,\"text\":\"\xc3\"}"} {
		if _, err := decodeMessage([]byte(data)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeMessage(%q) = %v, want ErrCorrupt", data, err)
		}
	}
}

func TestWriterOrder(t *testing.T) {
	for _, tt := range []struct {
		a, b Writer
		less bool
	}{
		{Writer{1, 1}, Writer{1, 2}, true},
		{Writer{1, 9}, Writer{2, 1}, true},
		{Writer{2, 1}, Writer{1, 9}, false},
		{Writer{3, 3}, Writer{3, 3}, false},
	} {
		if got := tt.a.Less(tt.b); got != tt.less {
			t.Errorf("%s.Less(%s) = %v", tt.a, tt.b, got)
		}
	}
}

// FuzzDecodeChunk checks that the chunk decoder never panics, and that what
// it accepts is a run of consecutive messages that encode and decode again
// to the same messages.
func FuzzDecodeChunk(f *testing.F) {
	good, _, err := encodeChunk("s", []Message{
		{Sequence: 1, Role: pluginapi.RoleUser, Text: "hi <there> & \x00 é"},
		{Sequence: 2, Role: pluginapi.RoleAssistant, Text: "x", Item: `{"a":[1,2]}`, TurnID: "t"},
		{Sequence: 3, Role: pluginapi.RoleTool, ToolCallID: "c", ToolName: "n", ToolStatus: pluginapi.ToolCallFailed},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, s := range []string{`[]`, `[{"sequence":1}]`, `[{"sequence":1,"SEQUENCE":2}]`, `[{"sequence":1e3}]`, `[{"sequence":1}] x`, `[null]`, `[{"text":"\ud800"}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := decodeChunk(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(msgs) == 0 || msgs[0].Sequence < 1 {
			t.Fatalf("accepted %d messages from %d", len(msgs), msgs[0].Sequence)
		}
		for i := 1; i < len(msgs); i++ {
			if msgs[i].Sequence != msgs[i-1].Sequence+1 {
				t.Fatalf("accepted sequence %d after %d", msgs[i].Sequence, msgs[i-1].Sequence)
			}
		}
		for i := range msgs {
			if !checkText(&msgs[i]) {
				t.Fatalf("message %d has text that is not UTF-8", i)
			}
		}
		again, ref, err := encodeChunk("s", msgs)
		if errors.Is(err, ErrTooLarge) {
			return
		}
		if err != nil {
			t.Fatalf("the decoded messages do not encode: %v", err)
		}
		if !utf8.Valid(again) || ref.Count != len(msgs) || int(ref.Bytes) != len(again) {
			t.Fatalf("encodeChunk = %d bytes, ref %+v", len(again), ref)
		}
		back, err := decodeChunk(again)
		if err != nil {
			t.Fatalf("the store's own encoding does not decode: %v\n%s", err, again)
		}
		if d := cmp.Diff(msgs, back); d != "" {
			t.Fatalf("encode and decode changed the messages (-first +again):\n%s", d)
		}
		if strings.Contains(string(again), `\u003c`) {
			t.Fatalf("the encoding escapes HTML: %s", again)
		}
	})
}
