package approvaldigest

import (
	"strings"
	"testing"
)

var (
	key1 = []byte("0123456789abcdef0123456789abcdef")
	key2 = []byte("fedcba9876543210fedcba9876543210")
)

func sub() Subject {
	return Subject{SessionID: "s-1", ToolCallID: "call_1", ToolName: "refund_order", Arguments: `{"order_id":7,"amount_cents":1500}`}
}

func TestSignAndVerify(t *testing.T) {
	s, err := NewSigner(false, key1)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Sign(sub())
	if !strings.HasPrefix(d, "v1.") || len(d) != len("v1.")+43 {
		t.Fatalf("digest %q: want v1. and 43 base64url characters", d)
	}
	if !s.Verify(sub(), d) {
		t.Fatal("the digest of a subject does not verify")
	}
	// The same arguments written another way digest alike.
	same := sub()
	same.Arguments = "{ \"amount_cents\": 1500,\n \"order_id\": 7 }"
	if !s.Verify(same, d) {
		t.Fatal("reordered, respaced arguments do not verify")
	}
	tampered := map[string]func(*Subject){
		"arguments": func(x *Subject) { x.Arguments = `{"order_id":7,"amount_cents":150000}` },
		"number":    func(x *Subject) { x.Arguments = `{"order_id":7.0,"amount_cents":1500}` },
		"tool":      func(x *Subject) { x.ToolName = "refund_order2" },
		"call":      func(x *Subject) { x.ToolCallID = "call_2" },
		"session":   func(x *Subject) { x.SessionID = "s-2" },
		"ref":       func(x *Subject) { x.ArgumentsRef = "sha256:" + strings.Repeat("0", 64) },
		// Field boundaries are length-prefixed: moving a character from
		// one field to the next changes the digest.
		"boundary": func(x *Subject) { x.SessionID, x.ToolCallID = "s-1c", "all_1" },
	}
	for name, change := range tampered {
		x := sub()
		change(&x)
		if s.Verify(x, d) {
			t.Errorf("%s changed, and the digest still verifies", name)
		}
	}
	for _, bad := range []string{"", "v1.", "v2." + d[3:], d[:len(d)-1], d + "A", "v1.!!!!", strings.ToUpper(d)} {
		if s.Verify(sub(), bad) {
			t.Errorf("digest %q verifies", bad)
		}
	}
}

func TestKeyRotation(t *testing.T) {
	old, _ := NewSigner(false, key1)
	rotated, _ := NewSigner(false, key2, key1)
	next, _ := NewSigner(false, key2)
	d := old.Sign(sub())
	if !rotated.Verify(sub(), d) {
		t.Fatal("a digest of the previous key does not verify during the rotation")
	}
	if rotated.Sign(sub()) != next.Sign(sub()) {
		t.Fatal("the rotated signer does not sign with its first key")
	}
	if next.Verify(sub(), d) {
		t.Fatal("a digest of a removed key verifies")
	}
}

func TestNewSignerRefusesShortKeys(t *testing.T) {
	if _, err := NewSigner(false); err == nil {
		t.Fatal("no key: no error")
	}
	_, err := NewSigner(false, key1, []byte("short"))
	if err == nil || !strings.Contains(err.Error(), "key 2 is 5 bytes") {
		t.Fatalf("short key: %v", err)
	}
}

func TestCanonicalArguments(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"a":[true,null,"x<y"]}`, `{"a":[true,null,"x<y"],"b":1}`},
		{` {"n": 12345678901234567890} `, `{"n":12345678901234567890}`},
		{`{"a":1} {"b":2}`, `{"a":1} {"b":2}`}, // two values: as written
		{`{"a":1} x`, `{"a":1} x`},
		{`not json`, `not json`},
		{``, ``},
		{`"s"`, `"s"`},
	} {
		if got := CanonicalArguments(c.in); got != c.want {
			t.Errorf("CanonicalArguments(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzCanonicalArguments(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":2}`, `[1,2.50,"\u00e9"]`, `{"a":{"c":1,"b":[]}}`, `x`, `{"a":1}{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		c := CanonicalArguments(args)
		if again := CanonicalArguments(c); again != c {
			t.Fatalf("not idempotent: %q -> %q -> %q", args, c, again)
		}
	})
}
