package approvallink

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	key1 = []byte(strings.Repeat("k", 32))
	key2 = []byte(strings.Repeat("n", 32))
	now  = time.Unix(1_800_000_000, 0)
)

func approval() Claims {
	return Claims{SessionID: "s-1", InterruptID: "call_7", Action: Approve, Digest: "v1.abc", Channel: "ops-mail", Recipient: "ops@example.com", Expires: now.Add(time.Hour).Unix()}
}

func TestSignAndParse(t *testing.T) {
	s, err := NewSigner(key1)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Sign(approval())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "v1.") || strings.ContainsAny(tok, "+/= ") {
		t.Fatalf("token %q is not URL-safe", tok)
	}
	got, err := s.Parse(tok, now)
	if err != nil || got != approval() {
		t.Fatalf("parse = %+v, %v", got, err)
	}
}

// TestRefusals: a tampered payload or signature, another key, a cut token
// and an expired one are each refused with their own error; nothing of a
// refused token but an expired one's claims is returned.
func TestRefusals(t *testing.T) {
	s, _ := NewSigner(key1)
	tok, _ := s.Sign(approval())
	head, sig, _ := strings.Cut(strings.TrimPrefix(tok, "v1."), ".")
	payload, _ := base64.RawURLEncoding.DecodeString(head)
	forged := strings.Replace(string(payload), `"a":"approve"`, `"a":"reject"`, 1)
	other, _ := NewSigner(key2)
	otherTok, _ := other.Sign(approval())
	for _, tc := range []struct {
		name, token string
		want        error
	}{
		{"the payload changed", "v1." + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + sig, ErrSignature},
		{"another key", otherTok, ErrSignature},
		{"the signature cut", tok[:len(tok)-3], ErrMalformed},
		{"no signature", "v1." + head, ErrMalformed},
		{"another version", "v2." + head + "." + sig, ErrMalformed},
		{"empty", "", ErrMalformed},
		{"too long", "v1." + strings.Repeat("a", MaxTokenBytes) + "." + sig, ErrMalformed},
	} {
		if c, err := s.Parse(tc.token, now); !errors.Is(err, tc.want) || c != (Claims{}) {
			t.Errorf("%s: %+v, %v; want %v", tc.name, c, err, tc.want)
		}
	}
	if c, err := s.Parse(tok, now.Add(time.Hour)); !errors.Is(err, ErrExpired) || c.InterruptID != "call_7" {
		t.Errorf("expired: %+v, %v", c, err)
	}
}

// TestKeyRotation: a signer with a new key first still reads links of the
// old one; once the old key is dropped they fail.
func TestKeyRotation(t *testing.T) {
	old, _ := NewSigner(key1)
	tok, _ := old.Sign(approval())
	rotated, _ := NewSigner(key2, key1)
	if _, err := rotated.Parse(tok, now); err != nil {
		t.Fatalf("the old key's link during the rotation: %v", err)
	}
	fresh, _ := rotated.Sign(approval())
	if _, err := old.Parse(fresh, now); !errors.Is(err, ErrSignature) {
		t.Fatalf("the new key signs: %v", err)
	}
	done, _ := NewSigner(key2)
	if _, err := done.Parse(tok, now); !errors.Is(err, ErrSignature) {
		t.Fatalf("after the rotation: %v", err)
	}
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Fatal("a short key was taken")
	}
}

func TestClaimsAreChecked(t *testing.T) {
	s, _ := NewSigner(key1)
	for name, c := range map[string]Claims{
		"no digest":          {SessionID: "s", InterruptID: "i", Action: Approve, Expires: 1},
		"an unknown action":  {SessionID: "s", InterruptID: "i", Action: "run", Digest: "d", Expires: 1},
		"an answer, no text": {SessionID: "s", InterruptID: "i", Action: Answer, Expires: 1},
		"no expiry":          {SessionID: "s", InterruptID: "i", Action: Decline},
		"no interrupt":       {SessionID: "s", Action: Decline, Expires: 1},
		"a long choice":      {SessionID: "s", InterruptID: "i", Action: Answer, Choice: strings.Repeat("x", 501), Expires: 1},
	} {
		if _, err := s.Sign(c); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
}

// FuzzParse: no input makes Parse panic, and whatever it accepts is
// sound and signs back to the same token.
func FuzzParse(f *testing.F) {
	s, _ := NewSigner(key1)
	tok, _ := s.Sign(approval())
	f.Add(tok)
	f.Add("v1..")
	f.Add("v1.e30.AAAA")
	f.Add(tok[:20])
	f.Fuzz(func(t *testing.T, token string) {
		c, err := s.Parse(token, now)
		if err != nil {
			return
		}
		if c.Check() != nil {
			t.Fatalf("accepted unsound claims %+v", c)
		}
		again, err := s.Sign(c)
		if err != nil {
			t.Fatalf("accepted claims that do not sign: %v", err)
		}
		if _, err := s.Parse(again, now); err != nil {
			t.Fatalf("re-signed claims do not parse: %v", err)
		}
	})
}
