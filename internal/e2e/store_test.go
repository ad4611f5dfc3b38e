package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"

	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/httpapi"
	"github.com/dex-agents/dex-agent-worker/pluginapi"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	temporalclient "go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// largestPayload returns the size of the largest payload in a session's
// history (every run), and the event that holds it.
func largestPayload(t *testing.T, s *agenttest.Stack, id string) (int, string) {
	t.Helper()
	largest, where := 0, ""
	it := s.Client.GetWorkflowHistory(ctx(t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		eachPayload(e, func(p *commonpb.Payload) {
			if n := len(p.GetData()); n > largest {
				largest, where = n, fmt.Sprintf("event %d (%s)", e.GetEventId(), e.GetEventType())
			}
		})
	}
	return largest, where
}

// eachPayload calls fn for every Payload inside a history event.
func eachPayload(e *historypb.HistoryEvent, fn func(*commonpb.Payload)) {
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		if p, ok := m.Interface().(*commonpb.Payload); ok {
			fn(p)
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message())
					return true
				})
			case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
				walk(v.Message())
			}
			return true
		})
	}
	walk(proto.Clone(e).ProtoReflect())
}

// TestLargeContentTravelsByReference: a 1.5 MiB message of "<" and three
// tool outputs of 700 KB each in one turn. The session answers and keeps
// running, the largest payload in its history is a few KiB (the store
// holds the content), the answer reads back whole through the HTTP API,
// and an 8.5 MiB message is refused with a clear answer.
func TestLargeContentTravelsByReference(t *testing.T) {
	t.Parallel()
	s, base := newHTTPStack(t)
	id := start(t, s, "hello")
	s.WaitForSnapshot("the first answer", id, idleWithAnswer)
	sess := base + "/v1/sessions/" + id
	c := apiClient(t, base, tokenAll)

	big := strings.Repeat("<", 1536<<10)
	if ok, err := c.SendMessage(ctx(t), id, big); err != nil || !ok {
		t.Fatalf("send 1.5 MiB: %v %v", ok, err)
	}
	snap := s.WaitForSnapshot("the echo of 1.5 MiB", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 2 })
	last := snap.Messages[len(snap.Messages)-1]
	if !last.TextTruncated || len(last.Text) > 4<<10 {
		t.Errorf("the workflow's snapshot holds %d bytes of the answer (truncated %v); want a preview", len(last.Text), last.TextTruncated)
	}
	hs, _, err := c.Snapshot(ctx(t), id)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if got := hs.Messages[len(hs.Messages)-1]; got.Text != "echo: "+big || got.TextTruncated {
		t.Errorf("the HTTP snapshot's answer is %d bytes (truncated %v), want the whole echo", len(got.Text), got.TextTruncated)
	}

	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "call:big:700000 call:big:700001 call:big:700002"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the answer after three 700 KB outputs", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 3 })
	if snap.State.LastTurnError != "" {
		t.Fatalf("the turn failed: %s", snap.State.LastTurnError)
	}
	stored, err := s.StoredMessages(id)
	if err != nil {
		t.Fatal(err)
	}
	answer := stored[len(stored)-1].Text
	for _, n := range []int{700000, 700001, 700002} {
		if !strings.Contains(answer, "big=succeeded:"+strings.Repeat("x", n)+";") && !strings.HasSuffix(answer, "big=succeeded:"+strings.Repeat("x", n)) {
			t.Errorf("the answer lacks the whole %d-byte output", n)
		}
	}
	if n, where := largestPayload(t, s, id); n > 64<<10 {
		t.Errorf("the largest payload in the history is %d bytes, at %s; large content must travel by reference", n, where)
	}

	// The body limit is the wire's: sent raw, to see the 413 and its text.
	huge, _ := json.Marshal(map[string]string{"text": strings.Repeat("a", 8704<<10)})
	code, resp := do(t, "POST", sess+"/messages", tokenAll, string(huge))
	if code != 413 || !strings.Contains(string(resp), "may be at most 8388608") {
		t.Errorf("send 8.5 MiB: %d %s; want 413 naming the limit", code, resp)
	}
	// Sent inline to the workflow, past 64 KiB, a message is answered
	// false; the Go client without a store says why it cannot send it.
	h, err := s.Client.UpdateWorkflow(ctx(t), temporalclient.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: wire.UpdateSendUserMessage, WaitForStage: temporalclient.WorkflowUpdateStageCompleted,
		Args: []any{wire.SendUserMessageRequest{Text: strings.Repeat("b", 65<<10)}},
	})
	var accepted bool
	if err == nil {
		err = h.Get(ctx(t), &accepted)
	}
	if err != nil || accepted {
		t.Errorf("a 65 KiB inline send_user_message = %v, %v; want false", accepted, err)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, strings.Repeat("b", 65<<10)); !errors.Is(err, client.ErrNoMessageStore) || ok {
		t.Errorf("a 65 KiB message from a client without a store = %v, %v; want ErrNoMessageStore", ok, err)
	}
	snap = s.WaitForSnapshot("the session still running", id, idleWithAnswer)
	if snap.State.TurnCount != 3 {
		t.Errorf("turns = %d, want 3 (the refused messages started none)", snap.State.TurnCount)
	}
}

// storeStack is a stack whose agent keeps a window of 2 messages, cuts
// chunks of 2 and keeps the newest 6 messages.
func storeStack(t *testing.T) *agenttest.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", "    message_window_size: 2\n    message_chunk_size: 2\n    retained_message_limit: 6\n    run_model_limit:", 1)
	return agenttest.NewStack(t, cfg)
}

// retentionStack is storeStack with compaction on a 1,000-token window.
func retentionStack(t *testing.T) *agenttest.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", "    message_window_size: 2\n    message_chunk_size: 2\n    retained_message_limit: 6\n"+
		"    compaction: {context_window_tokens: 1000, trigger_ratio: 0.85, keep_ratio: 0.3}\n    run_model_limit:", 1)
	return agenttest.NewStack(t, cfg)
}

// wantTranscriptWithSummaries is wantTranscript for stored messages that
// may include what compaction stores besides the turns.
func wantTranscriptWithSummaries(t *testing.T, stored []pluginapi.Message, texts []string, first int) {
	t.Helper()
	var want []string
	for _, text := range texts {
		want = append(want, "user:"+text, "assistant:echo: "+text)
	}
	var got []string
	for i, m := range stored {
		if m.Sequence != int64(first+i) {
			t.Errorf("message %d has sequence %d: a hole or a repeat", first+i, m.Sequence)
		}
		got = append(got, string(m.Role)+":"+m.Text)
	}
	// The kept messages are the end of the turns, in order.
	if len(got) > len(want) || strings.Join(got, "\n") != strings.Join(want[len(want)-len(got):], "\n") {
		t.Errorf("stored transcript:\n%s\nwant the end of:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantTranscript checks that the session's stored messages are exactly the
// turns sent, in order, from first on: no message lost, none twice.
func wantTranscript(t *testing.T, s *agenttest.Stack, id string, texts []string, first int) {
	t.Helper()
	stored, err := s.StoredMessages(id)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, text := range texts {
		want = append(want, "user:"+text, "assistant:echo: "+text)
	}
	want = want[first-1:]
	var got []string
	for i, m := range stored {
		if m.Sequence != int64(first+i) {
			t.Errorf("message %d has sequence %d: a hole or a repeat", first+i, m.Sequence)
		}
		got = append(got, string(m.Role)+":"+m.Text)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKilledBetweenAChunkWriteAndItsCommit: the worker dies after a Step
// cut and stored a chunk, before the workflow committed it. The next
// attempt cuts the same chunk again (a no-op), the turn completes, and the
// stored transcript has every message once; the rows the chunk holds are
// deleted by the next Step.
func TestKilledBetweenAChunkWriteAndItsCommit(t *testing.T) {
	t.Parallel()
	s := storeStack(t)
	gate := s.Gate("after-roll-1")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "one")
	s.WaitForSnapshot("turn 1", id, idleWithAnswer)
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "two"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	s.WaitForSnapshot("turn 2", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 2 })
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "three"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	// The window holds 1..4 (window 2 + chunk 2): turn 3's first storing
	// Step rolls 1..2, stores the chunk, and stops.
	reached(t, gate)
	w.Kill()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	s.WaitForSnapshot("turn 3", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 3 })
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "four"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap := s.WaitForSnapshot("turn 4", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 4 })
	if len(snap.Messages) > 4 {
		t.Errorf("the window holds %d messages, want at most 4 (window 2 + chunk 2)", len(snap.Messages))
	}
	wantTranscript(t, s, id, []string{"one", "two", "three", "four"}, 1)
}

// TestKilledDuringRetention: with compaction, retention deletes only the
// chunks the context summary covers, and never the newest
// retained_message_limit (6) messages. The worker dies after a Step deleted
// them, before the workflow committed it. The next attempt deletes what is
// left (nothing), and the session goes on: the messages retention kept are
// all there, once, and pages say where deletion ended.
func TestKilledDuringRetention(t *testing.T) {
	t.Parallel()
	s := retentionStack(t)
	w := s.StartWorker()
	gate := s.Gate("after-retention")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	// 300-byte messages: the 1,000-token window (about 3,000 bytes) is
	// compacted every few turns.
	text := func(i int) string { return fmt.Sprintf("m%02d %s", i, strings.Repeat("x", 300)) }
	texts := []string{text(1)}
	id := start(t, s, texts[0])
	for {
		turn, retained := len(texts), false
		err := agenttest.WaitFor(ctx(t), fmt.Sprintf("turn %d, or retention", turn), 90*time.Second, func() (bool, error) {
			if _, ok := gate.Reached(); ok {
				retained = true
				return true, nil
			}
			snap, err := s.Sessions.GetAgentSnapshot(ctx(t), id)
			return err == nil && idleWithAnswer(snap) && snap.State.TurnCount == turn, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if retained {
			break
		}
		if turn == 30 {
			t.Fatal("30 turns and retention deleted nothing")
		}
		texts = append(texts, text(turn+1))
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, texts[turn]); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	w.Kill()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	snap := s.WaitForSnapshot("the last turn", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == len(texts) })
	page, err := s.Sessions.ListAgentMessages(ctx(t), id, wire.ListMessagesRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if page.DeletedBeforeSequence < 2 || page.FirstSequence != page.DeletedBeforeSequence {
		t.Fatalf("page = first %d, deleted before %d; want retention to have deleted the oldest chunks", page.FirstSequence, page.DeletedBeforeSequence)
	}
	// Only summarized messages went.
	if snap.ContextSummary == nil || snap.ContextSummary.LastSequence < page.DeletedBeforeSequence-1 {
		t.Fatalf("retention deleted before %d, but the summary covers %+v", page.DeletedBeforeSequence, snap.ContextSummary)
	}
	stored, err := s.StoredMessages(id)
	if err != nil {
		t.Fatal(err)
	}
	// What is left starts where the page says and runs to the end with no
	// hole; at least the newest 6 messages are kept.
	if len(stored) == 0 || stored[0].Sequence < page.DeletedBeforeSequence {
		t.Fatalf("stored from %v, but retention cut before %d", stored, page.DeletedBeforeSequence)
	}
	wantTranscriptWithSummaries(t, stored, texts, int(stored[0].Sequence))
	if n := len(stored); n < 6 {
		t.Errorf("%d messages kept, want at least the newest 6", n)
	}
	if *updateHistories {
		recordHistory(t, s, id, "retention_turns.json")
	}
}

// TestNoRetentionWithoutCompaction: without compaction the model's input
// is every message, so retention deletes none, however many there are
// past retained_message_limit (6).
func TestNoRetentionWithoutCompaction(t *testing.T) {
	t.Parallel()
	s := storeStack(t)
	s.StartWorker()
	id := start(t, s, "one")
	s.WaitForSnapshot("turn 1", id, idleWithAnswer)
	texts := []string{"one"}
	for i := 2; i <= 8; i++ {
		text := fmt.Sprintf("m%d", i)
		texts = append(texts, text)
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, text); err != nil || !ok {
			t.Fatal(ok, err)
		}
		s.WaitForSnapshot(text, id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == i })
	}
	page, err := s.Sessions.ListAgentMessages(ctx(t), id, wire.ListMessagesRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if page.DeletedBeforeSequence != 0 || page.FirstSequence != 1 {
		t.Errorf("page = first %d, deleted before %d; want nothing deleted", page.FirstSequence, page.DeletedBeforeSequence)
	}
	wantTranscript(t, s, id, texts, 1)
}

// TestOlderPagesComeFromTheStore: the workflow holds only the window; the
// HTTP API and the Go client page through every retained message, oldest
// first, from the store.
func TestOlderPagesComeFromTheStore(t *testing.T) {
	t.Parallel()
	s := storeStack(t)
	s.StartWorker()
	id := start(t, s, "t1")
	s.WaitForSnapshot("turn 1", id, idleWithAnswer)
	for i := 2; i <= 4; i++ {
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, fmt.Sprintf("t%d", i)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		s.WaitForSnapshot(fmt.Sprintf("turn %d", i), id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == i })
	}
	// The workflow's own page is the window.
	page, err := s.Sessions.ListAgentMessages(ctx(t), id, wire.ListMessagesRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if page.WindowFirstSequence <= 1 || len(page.Messages) > 4 || !page.HasMore {
		t.Fatalf("workflow page: window from %d, %d messages, has_more %v", page.WindowFirstSequence, len(page.Messages), page.HasMore)
	}
	// With the store, pages of 3 walk back to the first message.
	st := s.MessageStore(t)
	sessions := s.Sessions.WithMessages(st)
	var seqs []int64
	before := int64(0)
	for {
		p, err := sessions.ListAgentMessages(ctx(t), id, wire.ListMessagesRequest{BeforeSequence: before, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, m := range p.Messages {
			got = append(got, m.Sequence)
			if len(m.Item) == 0 && m.Role == wire.RoleAssistant {
				t.Errorf("message %d has no framework item: pages from the store are whole", m.Sequence)
			}
		}
		seqs = append(got, seqs...)
		if !p.HasMore {
			break
		}
		before = p.NextBeforeSequence
	}
	if want := "[1 2 3 4 5 6 7 8]"; fmt.Sprint(seqs) != want {
		t.Errorf("paged sequences %v, want %s", seqs, want)
	}
}

// TestLongTextsStartAndContinueSessions: a Go client with the store and the
// HTTP API start a session with a 100 KB initial message and send a 300 KB
// one; each travels by reference and the model sees it whole.
func TestLongTextsStartAndContinueSessions(t *testing.T) {
	t.Parallel()
	s, base := newHTTPStack(t)
	sessions := s.Sessions.WithMessages(s.MessageStore(t))
	first, second := strings.Repeat("é", 50_000), strings.Repeat("z", 300_000)
	id, err := sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, InitialMessage: first})
	if err != nil {
		t.Fatal(err)
	}
	s.WaitForSnapshot("the answer to the long initial message", id, idleWithAnswer)
	if ok, err := sessions.SendUserMessage(ctx(t), id, second); err != nil || !ok {
		t.Fatalf("send 300 KB: %v %v", ok, err)
	}
	s.WaitForSnapshot("turn 2", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 2 })
	stored, err := s.StoredMessages(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 4 || stored[1].Text != "echo: "+first || stored[3].Text != "echo: "+second {
		t.Errorf("the model did not see the whole texts: %d messages", len(stored))
	}

	created, err := apiClient(t, base, tokenAll).StartSession(ctx(t), httpclient.StartRequest{Agent: "test", InitialMessage: second})
	if err != nil {
		t.Fatalf("start over HTTP with 300 KB: %v", err)
	}
	s.WaitForSnapshot("the answer over HTTP", created, idleWithAnswer)
	if stored, err := s.StoredMessages(created); err != nil || len(stored) != 2 || stored[1].Text != "echo: "+second {
		t.Errorf("the HTTP session's transcript: %d messages, %v", len(stored), err)
	}
	// The body limit is the wire's: sent raw, to see the 413 and its text.
	huge, _ := json.Marshal(map[string]string{"agent": "test", "initial_message": strings.Repeat("a", 8704<<10)})
	if code, resp := do(t, "POST", base+"/v1/sessions", tokenAll, string(huge)); code != 413 || !strings.Contains(string(resp), "may be at most 8388608") {
		t.Errorf("start with 8.5 MiB: %d %s; want 413 naming the limit", code, resp)
	}
}

// TestPagingEnds pages a 300-message session, oldest last, through the raw
// list_agent_messages query (the window only: older messages live in the
// store, which it cannot read), the Go client with the store, and the HTTP
// API: each pager stops on its own, the raw one where the window begins.
func TestPagingEnds(t *testing.T) {
	t.Parallel()
	s := storeStack(t)
	s.StartWorker()
	id := start(t, s, "t1")
	s.WaitForSnapshot("turn 1", id, idleWithAnswer)
	for i := 2; i <= 150; i++ {
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, fmt.Sprintf("t%d", i)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		s.WaitForSnapshot(fmt.Sprintf("turn %d", i), id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == i })
	}
	type pager func(before int64) (wire.MessagesPage, error)
	walk := func(name string, next pager) (seqs []int64, last wire.MessagesPage) {
		t.Helper()
		before := int64(0)
		for pages := 0; ; pages++ {
			if pages > 400 {
				t.Fatalf("%s: paging did not end after 400 pages", name)
			}
			p, err := next(before)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var got []int64
			for _, m := range p.Messages {
				got = append(got, m.Sequence)
			}
			seqs = append(got, seqs...)
			if !p.HasMore {
				return seqs, p
			}
			if before != 0 && p.NextBeforeSequence >= before {
				t.Fatalf("%s: a page before %d points at %d", name, before, p.NextBeforeSequence)
			}
			before = p.NextBeforeSequence
		}
	}
	whole := func(name string, seqs []int64) {
		t.Helper()
		if len(seqs) != 300 || seqs[0] != 1 || seqs[299] != 300 {
			t.Errorf("%s: %d messages from %v to %v, want 1..300", name, len(seqs), seqs[:min(1, len(seqs))], seqs[max(len(seqs)-1, 0):])
		}
	}

	raw, last := walk("raw query", func(before int64) (wire.MessagesPage, error) {
		return s.Sessions.ListAgentMessages(ctx(t), id, wire.ListMessagesRequest{BeforeSequence: before, Limit: 7})
	})
	if len(raw) == 0 || raw[0] != last.WindowFirstSequence || raw[len(raw)-1] != 300 || last.WindowFirstSequence <= 1 {
		t.Errorf("raw query: %d messages from %v, window first %d; want the window, ending where it begins", len(raw), raw[:min(1, len(raw))], last.WindowFirstSequence)
	}

	store := s.Sessions.WithMessages(s.MessageStore(t))
	seqs, _ := walk("Go client", func(before int64) (wire.MessagesPage, error) {
		return store.ListAgentMessages(ctx(t), id, wire.ListMessagesRequest{BeforeSequence: before, Limit: 7})
	})
	whole("Go client", seqs)

	api := httpapi.New(httpapi.Options{
		Temporal: s.Client, Namespace: "default", TaskQueue: wire.DefaultTaskQueue,
		Broker:   events.NewMemoryBroker(events.MemoryOptions{}),
		Agents:   []httpapi.Agent{{Name: "test", FlowType: flowType}},
		Tokens:   []httpapi.Token{{Name: "all", Value: tokenAll}},
		Messages: s.MessageStore(t).(transcript.Reader).Store,
	})
	hs := httptest.NewServer(api)
	t.Cleanup(func() { api.Close(); hs.Close() })
	hc := apiClient(t, hs.URL, tokenAll)
	seqs, _ = walk("HTTP", func(before int64) (wire.MessagesPage, error) { return hc.Messages(ctx(t), id, before, 7) })
	whole("HTTP", seqs)

	// The snapshot holds the newest 200 stored messages wherever the store
	// can be read; the raw query holds the window and says where it begins.
	newest := func(name string, msgs []wire.Message, windowFirst int64) {
		t.Helper()
		if len(msgs) != wire.SnapshotMessageLimit || msgs[0].Sequence != 101 || msgs[len(msgs)-1].Sequence != 300 || windowFirst != 0 {
			t.Errorf("%s snapshot: %d messages, window first %d; want 101..300 and no window", name, len(msgs), windowFirst)
		}
		for _, m := range msgs {
			if m.TextTruncated || (m.Role == wire.RoleAssistant && m.Item == "") {
				t.Errorf("%s snapshot: message %d is not whole", name, m.Sequence)
				break
			}
		}
	}
	rawSnap, err := s.Sessions.GetAgentSnapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rawSnap.Messages); n == 0 || n >= 200 || rawSnap.WindowFirstSequence != rawSnap.Messages[0].Sequence {
		t.Errorf("raw snapshot: %d messages, window first %d; want the window, and where it begins", n, rawSnap.WindowFirstSequence)
	}
	goSnap, err := store.GetAgentSnapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	newest("Go client", goSnap.Messages, goSnap.WindowFirstSequence)
	httpSnap, _, err := hc.Snapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	// The browser form leaves framework items out.
	for i := range httpSnap.Messages {
		httpSnap.Messages[i].Item = "x"
	}
	newest("HTTP", httpSnap.Messages, httpSnap.WindowFirstSequence)
}
