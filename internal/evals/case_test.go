package evals

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadRefusesWhatItCannotRead(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "no case header",
		`{"type":"user_message"}`: "want the case header",
		`{"type":"case","format":"dex-eval-case/2"}`:                                   `format "dex-eval-case/2": this build reads dex-eval-case/1`,
		`{"type":"case","format":"dex-eval-case/1"}` + "\n" + `{"type":"tool_result"}`: `line 2: unknown record type "tool_result"`,
		`{"type":"case","format":"dex-eval-case/1"}` + "\n" + `{"type":`:               `line 2:`,
		`[1,2]`: "line 1: the header",
	} {
		if _, err := Read(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%q) = %v, want %q", in, err, want)
		}
	}
	// A later minor version, and fields this build does not know, read.
	c, err := Read(strings.NewReader(`{"type":"case","format":"dex-eval-case/1.3","session_id":"s","new":1}` + "\n\n" + `{"type":"turn","turn":"turn-1","status":"completed","later":true}`))
	if err != nil || c.Header.SessionID != "s" || len(c.Records) != 1 || c.Records[0].Status != "completed" {
		t.Fatalf("Read: %+v %v", c, err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"type":"case","format":"dex-eval-case/1","session_id":"s"}` + "\n" + `{"type":"user_message","text":"hi"}`))
	f.Add([]byte(`{"type":"case","format":"dex-eval-case/1"}` + "\n" + `{"type":"approval","approved":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// What reads, writes and reads again the same.
		var b bytes.Buffer
		if err := c.Write(&b); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&b)
		if err != nil {
			t.Fatalf("a case read from %q does not read back: %v", data, err)
		}
		if len(again.Records) != len(c.Records) {
			t.Fatalf("%d records, then %d", len(c.Records), len(again.Records))
		}
	})
}

func TestRedactReachesEveryText(t *testing.T) {
	yes := true
	c := &Case{Header: Header{Settings: []byte(`{"note":"k-SECRET"}`)}, Records: []Record{
		{Type: TypeUserMessage, Text: "my key is k-SECRET"},
		{Type: TypeToolCall, Arguments: `{"key":"k-SECRET"}`, Output: "used k-SECRET", Rule: &Rule{Reason: "k-SECRET is trusted"}},
		{Type: TypeApproval, Approved: &yes, Message: "ok k-SECRET"},
		{Type: TypeQuestion, Question: "k-SECRET?", Choices: []string{"k-SECRET", "no"}, Answer: "k-SECRET"},
		{Type: TypeTurn, Answer: "done k-SECRET", Error: "failed k-SECRET"},
	}}
	c.Redact(func(s string) string { return strings.ReplaceAll(s, "k-SECRET", "<redacted>") })
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "k-SECRET") || strings.Count(b.String(), "<redacted>") != 11 {
		t.Errorf("after Redact:\n%s", b.String())
	}
	// Settings that are no longer JSON after redaction stay a valid case.
	c = &Case{Header: Header{Settings: []byte(`{"a":1}`)}}
	c.Redact(func(s string) string { return strings.ReplaceAll(s, `"a"`, "<redacted>") })
	b.Reset()
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(&b); err != nil {
		t.Fatal(err)
	}
}
