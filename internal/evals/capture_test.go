package evals

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

var updateCases = flag.Bool("update-cases", false, "write testdata/cases/*.jsonl from the recorded histories")

var recorded = filepath.Join("..", "sessionflow", "testdata", "histories")

func readHistory(t *testing.T, path string) *historypb.History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var captured = time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)

func decodeFile(t *testing.T, path string) *Case {
	t.Helper()
	c, err := Decode(context.Background(), Session{ID: "s-1", Agent: "test", FlowType: "TestAgent", Status: "running", Runs: []*historypb.History{readHistory(t, path)}}, nil, captured)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every recorded history decodes into a case, kept in testdata/cases: a
// change to the capture shows there as a diff.
func TestCasesOfTheRecordedHistories(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(recorded, "*.json"))
	if len(paths) < 20 {
		t.Fatalf("%d recorded histories", len(paths))
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json") + ".jsonl"
		t.Run(name, func(t *testing.T) {
			c := decodeFile(t, p)
			var b bytes.Buffer
			if err := c.Write(&b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "cases", name)
			if *updateCases {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-cases)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("the case of %s changed (run with -update-cases to accept):\n%s", p, b.String())
			}
			// A case reads back as written.
			back, err := Read(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			c.Header.Type, c.Header.Format = TypeCase, Format
			if !reflect.DeepEqual(back.Header, c.Header) || !reflect.DeepEqual(back.Records, c.Records) {
				t.Errorf("read back:\n%+v\nwant\n%+v", back, c)
			}
		})
	}
}

// What the cases say, checked by hand for the kinds of record.
func TestCaseContents(t *testing.T) {
	approval := decodeFile(t, filepath.Join(recorded, "approval_turn.json"))
	want := []string{
		`user_message "call:read_gate:h call:approve_write:h"`,
		`tool_call turn-1 read_gate {"name":"h"} read succeeded "read h"`,
		`tool_call turn-1 approve_write {"name":"h"} non_idempotent_write succeeded "wrote h" approval`,
		`approval turn-1 approve_write approved`,
		`turn turn-1 completed "done: read_gate=succeeded:read h; approve_write=succeeded:wrote h" calls 2`,
		`user_message "thanks"`,
		`turn turn-2 completed "echo: thanks" calls 1`,
	}
	if got := summary(approval); !reflect.DeepEqual(got, want) {
		t.Errorf("approval_turn.json:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rules := decodeFile(t, filepath.Join(recorded, "rules_turns.json"))
	var decisions []string
	for _, r := range rules.Records {
		if r.Rule != nil {
			decisions = append(decisions, r.Rule.Decision+"/"+r.Rule.ShadowDecision+" "+r.Status)
		}
	}
	if want := []string{"allow/ succeeded", "deny/ rejected", "require_approval/ succeeded", "/deny succeeded"}; !reflect.DeepEqual(decisions, want) {
		t.Errorf("rules_turns.json decisions %v, want %v", decisions, want)
	}
	builtin := decodeFile(t, filepath.Join(recorded, "builtin_v5_turns.json"))
	var questions []string
	for _, r := range builtin.Records {
		if r.Type == TypeQuestion {
			questions = append(questions, r.Question+" "+strings.Join(r.Choices, ",")+" "+r.Resolution+" "+r.Answer)
		}
	}
	if want := []string{"Which size? S,M,L answered M", "Gift wrap?  declined "}; !reflect.DeepEqual(questions, want) {
		t.Errorf("builtin_v5_turns.json questions %q, want %q", questions, want)
	}
	deadline := decodeFile(t, filepath.Join(recorded, "deadline_turns.json"))
	var approvals []string
	for _, r := range deadline.Records {
		if r.Type == TypeApproval {
			approvals = append(approvals, r.ToolName+" "+r.Resolution)
		}
	}
	if len(approvals) == 0 {
		t.Error("deadline_turns.json: no approval")
	}
}

func summary(c *Case) []string {
	var out []string
	for _, r := range c.Records {
		switch r.Type {
		case TypeUserMessage:
			out = append(out, r.Type+` "`+r.Text+`"`)
		case TypeToolCall:
			s := strings.Join([]string{r.Type, r.Turn, r.ToolName, r.Arguments, r.Effect, r.Status, `"` + r.Output + `"`}, " ")
			if r.RequiresApproval {
				s += " approval"
			}
			out = append(out, s)
		case TypeApproval:
			how := "rejected"
			if *r.Approved {
				how = "approved"
			}
			out = append(out, strings.Join([]string{r.Type, r.Turn, r.ToolName, how}, " "))
		case TypeTurn:
			out = append(out, strings.Join([]string{r.Type, r.Turn, r.Status, `"` + r.Answer + `"`, "calls", strconv.FormatInt(r.Usage.ModelCalls, 10)}, " "))
		}
	}
	return out
}
