package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readAll returns the events of in and the reader's last event ID at the end.
func readAll(t testing.TB, in string) ([]Event, string) {
	t.Helper()
	r := NewReader(strings.NewReader(in))
	var out []Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.LastEventID()
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, ev)
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   []Event
		lastID string
	}{
		{name: "one frame", in: "id: t1\ndata: {\"a\":1}\n\n", want: []Event{{ID: "t1", Data: `{"a":1}`}}, lastID: "t1"},
		{name: "multi-line data", in: "id: t1\ndata: first\ndata: second\ndata:\ndata: fourth\n\n",
			want: []Event{{ID: "t1", Data: "first\nsecond\n\nfourth"}}, lastID: "t1"},
		{name: "comments", in: ": keep-alive\n\n: hello\nid: t1\n: in between\ndata: x\n\n:\n\n",
			want: []Event{{ID: "t1", Data: "x"}}, lastID: "t1"},
		{name: "CRLF", in: "id: t1\r\ndata: a\r\ndata: b\r\n\r\nid: t2\r\ndata: c\r\n\r\n",
			want: []Event{{ID: "t1", Data: "a\nb"}, {ID: "t2", Data: "c"}}, lastID: "t2"},
		{name: "CR alone", in: "id: t1\rdata: a\r\rdata: b\r\r",
			want: []Event{{ID: "t1", Data: "a"}, {ID: "t1", Data: "b"}}, lastID: "t1"},
		{name: "mixed line endings", in: "data: a\r\ndata: b\rdata: c\n\r\n", want: []Event{{Data: "a\nb\nc"}}},
		{name: "id without data", in: "id: t1\ndata: a\n\nid: t2\n\ndata: b\n\n",
			want: []Event{{ID: "t1", Data: "a"}, {ID: "t2", Data: "b"}}, lastID: "t2"},
		{name: "id without data at the end", in: "id: t1\ndata: a\n\nid: t2\n\n",
			want: []Event{{ID: "t1", Data: "a"}}, lastID: "t2"},
		{name: "id of a cut-off frame does not count", in: "id: t1\ndata: a\n\nid: t2\ndata: b\n",
			want: []Event{{ID: "t1", Data: "a"}}, lastID: "t1"},
		{name: "empty id resets", in: "id: t1\ndata: a\n\nid\ndata: b\n\n",
			want: []Event{{ID: "t1", Data: "a"}, {ID: "", Data: "b"}}},
		{name: "id with NUL ignored", in: "id: t1\n\nid: a\x00b\ndata: x\n\n", want: []Event{{ID: "t1", Data: "x"}}, lastID: "t1"},
		{name: "retry field ignored", in: "retry: 10\nid: t1\nretry: x\ndata: a\n\n", want: []Event{{ID: "t1", Data: "a"}}, lastID: "t1"},
		{name: "unknown fields ignored", in: "foo: bar\ndata: a\nDATA: b\n\n", want: []Event{{Data: "a"}}},
		{name: "no space after colon", in: "id:t1\ndata:a\n\n", want: []Event{{ID: "t1", Data: "a"}}, lastID: "t1"},
		{name: "only one space is stripped", in: "data:  a \n\n", want: []Event{{Data: " a "}}},
		{name: "field without colon", in: "data\ndata\n\n", want: []Event{{Data: "\n"}}},
		{name: "empty data", in: "data:\n\n", want: []Event{{Data: ""}}},
		{name: "colon in value", in: "data: a: b\n\n", want: []Event{{Data: "a: b"}}},
		{name: "event type", in: "event: ping\ndata: a\n\ndata: b\n\n", want: []Event{{Type: "ping", Data: "a"}, {Data: "b"}}},
		{name: "event type without data is dropped", in: "event: ping\n\ndata: b\n\n", want: []Event{{Data: "b"}}},
		{name: "byte order mark", in: "\uFEFFdata: a\n\n", want: []Event{{Data: "a"}}},
		{name: "unterminated frame dropped", in: "data: a\n\ndata: b\n", want: []Event{{Data: "a"}}},
		{name: "blank lines only", in: "\n\n\r\n"},
		{name: "empty stream", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, lastID := readAll(t, tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if lastID != tt.lastID {
				t.Errorf("LastEventID = %q, want %q", lastID, tt.lastID)
			}
		})
	}
}

// TestReaderStreams reads frames as they arrive: an event is returned at its
// blank line, before more input exists, even after a CR.
func TestReaderStreams(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr)
	got := make(chan Event)
	go func() {
		for {
			ev, err := r.Next()
			if err != nil {
				close(got)
				return
			}
			got <- ev
		}
	}()
	for i, frame := range []string{"id: 1\ndata: a\n\n", "id: 2\rdata: b\r\r", "id: 3\r\ndata: c\r\n\r\n"} {
		if _, err := io.WriteString(pw, frame); err != nil {
			t.Fatal(err)
		}
		ev := <-got
		if want := (Event{ID: string(rune('1' + i)), Data: string(rune('a' + i))}); ev != want {
			t.Errorf("frame %d: got %+v, want %+v", i, ev, want)
		}
	}
	pw.Close()
	if _, ok := <-got; ok {
		t.Error("an event after the stream ended")
	}
}

func TestReaderLimits(t *testing.T) {
	long := "data: " + strings.Repeat("x", MaxLineBytes) + "\n\n"
	if _, err := NewReader(strings.NewReader(long)).Next(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("long line: err = %v, want ErrTooLarge", err)
	}
	line := "data: " + strings.Repeat("x", 1<<16) + "\n"
	many := strings.Repeat(line, MaxDataBytes/(1<<16)+1) + "\n"
	if _, err := NewReader(strings.NewReader(many)).Next(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("large event: err = %v, want ErrTooLarge", err)
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{name: "frame", ev: Event{ID: "t1", Data: `{"a":1}`}, want: "id: t1\ndata: {\"a\":1}\n\n"},
		{name: "lines", ev: Event{ID: "t1", Type: "x", Data: "a\r\nb\rc\n"}, want: "id: t1\nevent: x\ndata: a\ndata: b\ndata: c\ndata: \n\n"},
		{name: "empty", ev: Event{}, want: "id: \ndata: \n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tt.ev); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("frame (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []Event{{ID: "a\nb"}, {ID: "a\x00"}, {Type: "a\rb"}} {
		if err := Write(io.Discard, bad); err == nil {
			t.Errorf("Write(%+v) = nil, want an error", bad)
		}
	}
}

// FuzzSSE checks that the reader never panics on any input, that the events
// it reads are written back by Write and read again unchanged, and that any
// event Write accepts reads back with its line breaks as "\n".
func FuzzSSE(f *testing.F) {
	f.Add([]byte("id: t1\ndata: a\ndata: b\n\n: keep-alive\n\n"), "t2", "", "x\ny")
	f.Add([]byte("id: t1\r\ndata: a\r\n\r\nid: t2\r\n\r\n"), "", "ping", "")
	f.Add([]byte("\uFEFFdata\rid:\x00\rretry: 5\r\revent: e\ndata:  x\n\n"), "a b", "e:f", "a\r\nb\rc")
	f.Add([]byte("data: a\ndata"), " lead", " t", "\n")
	f.Fuzz(func(t *testing.T, raw []byte, id, typ, data string) {
		r := NewReader(bytes.NewReader(raw))
		var parsed []Event
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			parsed = append(parsed, ev)
		}
		// Every event repeats the last ID, so a long ID in front of many
		// events would make the written stream quadratic: skip those.
		size := 0
		for _, ev := range parsed {
			size += len(ev.ID) + len(ev.Type) + len(ev.Data)
		}
		var buf bytes.Buffer
		if size <= 1<<20 {
			for _, ev := range parsed {
				if err := Write(&buf, ev); err != nil {
					t.Fatalf("Write(%+v) of a read event: %v", ev, err)
				}
			}
			again, _ := readAll(t, buf.String())
			if diff := cmp.Diff(parsed, again); diff != "" {
				t.Fatalf("read, written and read again (-first +second):\n%s", diff)
			}
		}

		ev := Event{ID: id, Type: typ, Data: data}
		buf.Reset()
		if err := Write(&buf, ev); err != nil {
			return
		}
		got, lastID := readAll(t, buf.String())
		want := Event{ID: id, Type: typ, Data: strings.Join(SplitLines(data), "\n")}
		if len(got) != 1 || got[0] != want || lastID != id {
			t.Fatalf("round trip of %+v: got %+v (last ID %q)", want, got, lastID)
		}
	})
}
