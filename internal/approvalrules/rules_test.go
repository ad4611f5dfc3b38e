package approvalrules

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	set, errs := Compile([]Rule{
		{Tool: "refund_order", When: "args.amount_cents <= 2000", Decision: Allow, Reason: "small refunds"},
		{Tool: "refund_order", When: `token == "support-bot"`, Decision: Deny, Reason: "bots never refund"},
		{Tool: "refund_order", When: "args.amount_cents > 2000", Decision: RequireApproval, Shadow: true, Reason: "trial"},
		{Tool: "*", When: `effect == "read" && has(settings.mode) && settings.mode == "locked"`, Decision: Deny, Reason: "locked"},
		{Tool: "lookup_order", Decision: RequireApproval},
		{Tool: "flaky", When: "args.missing > 1", Decision: Allow},
	})
	if errs != nil {
		t.Fatal(errs)
	}
	for _, tt := range []struct {
		name          string
		in            Input
		want, wantSh  string // "rule decision", "" for none
		reasonContain string
	}{
		{"a small refund is allowed", Input{Tool: "refund_order", Arguments: `{"order_id":"7","amount_cents":1500}`}, "approval_rules[0] allow", "", "small refunds"},
		{"the limit itself", Input{Tool: "refund_order", Arguments: `{"amount_cents":2000}`}, "approval_rules[0] allow", "", ""},
		{"a large refund: no enforcing rule, the shadow one records", Input{Tool: "refund_order", Arguments: `{"amount_cents":6250}`}, "", "approval_rules[2] require_approval", "trial"},
		{"a large refund by the bot token", Input{Tool: "refund_order", Arguments: `{"amount_cents":6250}`, Token: "support-bot"}, "approval_rules[1] deny", "approval_rules[2] require_approval", "bots never refund"},
		{"any tool, by effect and settings", Input{Tool: "lookup_order", Effect: "read", Settings: `{"mode":"locked"}`}, "approval_rules[3] deny", "", "locked"},
		{"no when always matches", Input{Tool: "lookup_order", Effect: "read"}, "approval_rules[4] require_approval", "", ""},
		{"no rule for the tool", Input{Tool: "other"}, "", "", ""},
		{"a when that fails never allows", Input{Tool: "flaky", Arguments: `{}`}, "approval_rules[5] require_approval", "", "could not be evaluated"},
		{"arguments that are not an object", Input{Tool: "flaky", Arguments: `[1,2]`}, "approval_rules[5] require_approval", "", "could not be evaluated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := set.Decide(tt.in)
			str := func(d *Decision) string {
				if d == nil {
					return ""
				}
				return d.Rule + " " + d.Decision
			}
			if str(out.Enforced) != tt.want || str(out.Shadow) != tt.wantSh {
				t.Fatalf("decided %q, shadow %q; want %q, %q", str(out.Enforced), str(out.Shadow), tt.want, tt.wantSh)
			}
			d := out.Enforced
			if d == nil {
				d = out.Shadow
			}
			if tt.reasonContain != "" && (d == nil || !strings.Contains(d.Reason, tt.reasonContain)) {
				t.Errorf("reason %+v, want it to hold %q", d, tt.reasonContain)
			}
		})
	}
	if !(*Set)(nil).Empty() || (&Set{}).Decide(Input{}).Enforced != nil {
		t.Error("an empty set decided")
	}
}

func TestCompileErrors(t *testing.T) {
	_, errs := Compile([]Rule{
		{Tool: "x", When: "args.amount <=", Decision: Allow},
		{Tool: "x", When: "args.amount + 1", Decision: Allow},
		{Tool: "", Decision: "maybe"},
		{Tool: "x", When: "nosuchvar == 1", Decision: Deny},
	})
	var got []string
	for _, e := range errs {
		got = append(got, strings.Join([]string{string(rune('0' + e.Index)), e.Field, e.Error()}, " "))
	}
	want := []string{
		"0 when does not compile",
		"1 when is a",
		"2 tool is required",
		"2 decision unknown decision \"maybe\"",
		"3 reason is required with decision deny",
		"3 when does not compile",
	}
	if len(got) != len(want) {
		t.Fatalf("errors %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d: %q, want it to start %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[5], "undeclared reference to 'nosuchvar'") {
		t.Errorf("the type check names the unknown variable: %q", got[5])
	}
}

func FuzzDecide(f *testing.F) {
	set, errs := Compile([]Rule{
		{Tool: "*", When: "has(args.n) && args.n > 3", Decision: Deny, Reason: "big"},
		{Tool: "t", When: `args.s.startsWith("a")`, Decision: Allow},
	})
	if errs != nil {
		f.Fatal(errs)
	}
	f.Add("t", `{"n":5}`, `{}`)
	f.Add("t", `{"s":"abc"}`, `{"x":1}`)
	f.Add("u", `not json`, `[]`)
	f.Fuzz(func(t *testing.T, tool, args, settings string) {
		out := set.Decide(Input{Tool: tool, Arguments: args, Settings: settings})
		if d := out.Enforced; d != nil && d.Decision == Allow && tool != "t" {
			t.Fatalf("allowed %q", tool)
		}
	})
}
