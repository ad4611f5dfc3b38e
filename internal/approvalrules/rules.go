// Package approvalrules decides a tool call's approval by rules the
// operator writes per agent (approval_rules): an ordered list of {tool,
// when, decision, reason, shadow}, where when is a CEL expression over the
// call's parsed arguments (args), the tool's effect (effect), the tool's
// name (tool), the turn's session settings (settings) and the name of the
// API token that started the session (token).
//
// The first enforcing rule that matches decides: allow (no approval),
// require_approval, or deny (the call is rejected with the rule's reason,
// which the model sees). With no match the tool's policy decides. A
// shadow rule is evaluated and its decision recorded, never enforced, so
// an operator can trial a rule on live traffic. The effect class (and so
// the retries) never changes. A when that fails to evaluate (a missing
// key, a wrong type) never allows: the call requires approval, and the
// decision says why.
package approvalrules

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
)

// Decisions.
const (
	Allow           = "allow"
	RequireApproval = "require_approval"
	Deny            = "deny"
)

// AnyTool is the tool of a rule that applies to every tool.
const AnyTool = "*"

// Rule is one rule as the config writes it.
type Rule struct {
	Tool     string
	When     string
	Decision string
	Reason   string
	Shadow   bool
}

// Input is what a rule sees of one call.
type Input struct {
	Tool string
	// Arguments is the call's arguments: JSON text of an object (anything
	// else reads as {}).
	Arguments string
	Effect    string
	// Settings is the turn's session settings, JSON text of an object.
	Settings string
	Token    string
}

// Decision is what the rules decided about a call.
type Decision struct {
	// Rule names the rule, such as "approval_rules[2]".
	Rule     string
	Decision string
	Reason   string
}

// Outcome is the enforcing decision and the shadow one (either nil).
type Outcome struct {
	Enforced *Decision
	Shadow   *Decision
}

// Set is a compiled rule list.
type Set struct {
	rules     []compiled
	hasShadow bool
}

type compiled struct {
	Rule
	name string
	prg  cel.Program // nil: no when, always matches
}

// Error is a rule that does not compile, with its index.
type Error struct {
	Index int
	// Field is the rule's key at fault: "tool", "when" or "decision".
	Field string
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }

// maxCost bounds the work one rule's evaluation may do.
const maxCost = 100_000

func env() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("settings", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("effect", cel.StringType),
		cel.Variable("tool", cel.StringType),
		cel.Variable("token", cel.StringType),
		// JSON numbers are doubles: args.amount_cents <= 2000 compares them
		// with ints.
		cel.CrossTypeNumericComparisons(true),
	)
}

// Compile checks and compiles rules; the errors name each bad rule.
func Compile(rules []Rule) (*Set, []*Error) {
	e, err := env()
	if err != nil {
		return nil, []*Error{{Index: -1, Field: "when", Err: err}}
	}
	var errs []*Error
	s := &Set{}
	for i, r := range rules {
		c := compiled{Rule: r, name: fmt.Sprintf("approval_rules[%d]", i)}
		switch {
		case strings.TrimSpace(r.Tool) == "":
			errs = append(errs, &Error{i, "tool", errors.New(`is required: a tool name, or "*" for every tool`)})
		}
		switch r.Decision {
		case Allow, RequireApproval:
		case Deny:
			if strings.TrimSpace(r.Reason) == "" {
				errs = append(errs, &Error{i, "reason", errors.New("is required with decision deny: the model sees it as the call's rejection")})
			}
		default:
			errs = append(errs, &Error{i, "decision", fmt.Errorf("unknown decision %q (want allow, require_approval or deny)", r.Decision)})
		}
		if strings.TrimSpace(r.When) != "" {
			ast, iss := e.Compile(r.When)
			if iss.Err() != nil {
				errs = append(errs, &Error{i, "when", fmt.Errorf("does not compile: %s", oneLine(iss.Err().Error()))})
				continue
			}
			if ast.OutputType() != cel.BoolType {
				errs = append(errs, &Error{i, "when", fmt.Errorf("is a %s expression; it must be a bool", ast.OutputType())})
				continue
			}
			prg, err := e.Program(ast, cel.CostLimit(maxCost))
			if err != nil {
				errs = append(errs, &Error{i, "when", err})
				continue
			}
			c.prg = prg
		}
		s.rules = append(s.rules, c)
		s.hasShadow = s.hasShadow || r.Shadow
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

// oneLine puts CEL's multi-line message (error, expression, caret) on one
// line.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		// CEL marks the expression and caret lines with "|".
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "|")); l != "" {
			parts = append(parts, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(parts, " | ")
}

// Empty reports whether the set has no rule.
func (s *Set) Empty() bool { return s == nil || len(s.rules) == 0 }

// Decide runs the rules on one call.
func (s *Set) Decide(in Input) Outcome {
	var out Outcome
	if s.Empty() {
		return out
	}
	vars := map[string]any{
		"args": object(in.Arguments), "settings": object(in.Settings),
		"effect": in.Effect, "tool": in.Tool, "token": in.Token,
	}
	for _, r := range s.rules {
		if (r.Shadow && out.Shadow != nil) || (!r.Shadow && out.Enforced != nil) {
			continue
		}
		if r.Tool != AnyTool && r.Tool != in.Tool {
			continue
		}
		d := r.match(vars)
		if d == nil {
			continue
		}
		if r.Shadow {
			out.Shadow = d
		} else {
			out.Enforced = d
		}
		if out.Enforced != nil && (out.Shadow != nil || !s.hasShadow) {
			break // both decided
		}
	}
	return out
}

// match is the rule's decision when it matches, nil when it does not. A
// when that fails to evaluate requires approval.
func (r compiled) match(vars map[string]any) *Decision {
	if r.prg != nil {
		v, _, err := r.prg.Eval(vars)
		if err != nil {
			return &Decision{Rule: r.name, Decision: RequireApproval,
				Reason: fmt.Sprintf("%s could not be evaluated (%s): the call needs approval", r.name, oneLine(err.Error()))}
		}
		if b, ok := v.Value().(bool); !ok || !b {
			return nil
		}
	}
	return &Decision{Rule: r.name, Decision: r.Decision, Reason: r.Reason}
}

// object parses JSON text of an object; anything else is {}.
func object(s string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}
