// Package approvallink makes and reads signed links that answer one
// interrupt: approve or reject one approval, answer or decline one
// question. A link is the whole credential of the person who holds it, so
// it carries only what it may do, bound to exactly that:
//
//   - the session and the interrupt (and, for a sub-agent's interrupt, the
//     child session that holds it),
//   - the action (approve, reject, answer with one choice, decline),
//   - for an approval, the approval digest of the call's tool and
//     arguments (package approvaldigest): the session refuses the answer
//     when the call it waits on is not the one the link was made for,
//   - its expiry,
//   - the channel and recipient it was sent to, recorded as who answered.
//
// A token is "v1.", the unpadded base64url of the claims' JSON, ".", and
// the unpadded base64url HMAC-SHA256 of everything before it, keyed by the
// operator's link key. The signer signs with its first key and verifies
// with any, so keys rotate like approval digest keys. A link is used once
// because the interrupt it answers is answered once: the first use wins,
// and every later one finds it answered.
package approvallink

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Version prefixes every token.
const Version = "v1"

// MinKeyBytes is the shortest key accepted.
const MinKeyBytes = 32

// MaxTokenBytes bounds a token; a longer one is refused before it is read.
const MaxTokenBytes = 4096

// Actions of a link.
const (
	Approve = "approve"
	Reject  = "reject"
	Answer  = "answer"
	Decline = "decline"
)

// Claims are what a link does.
type Claims struct {
	// SessionID is the session the link was sent about; Holder, when set,
	// the sub-agent session below it that holds the interrupt.
	SessionID   string `json:"s"`
	Holder      string `json:"h,omitempty"`
	InterruptID string `json:"i"`
	// Action is Approve or Reject for an approval, Answer or Decline for
	// a question; Choice is the answer of Answer.
	Action string `json:"a"`
	Choice string `json:"c,omitempty"`
	// Digest is the approval's digest the link is bound to (approvals).
	Digest string `json:"d,omitempty"`
	// Channel and Recipient are where the link was sent; they become the
	// answer's resolved_via ("link:" and the channel) and resolved_by.
	Channel   string `json:"ch,omitempty"`
	Recipient string `json:"to,omitempty"`
	// Expires is when the link stops working, in Unix seconds.
	Expires int64 `json:"e"`
}

// Limits of the claims' fields.
const (
	maxIDBytes     = 256
	maxChoiceBytes = 500
	maxDigestBytes = 128
	maxNameBytes   = 256
)

// Check returns why claims cannot make a link, or nil.
func (c Claims) Check() error {
	field := func(name, v string, max int, required bool) error {
		switch {
		case required && v == "":
			return fmt.Errorf("%s is required", name)
		case len(v) > max:
			return fmt.Errorf("%s is over %d bytes", name, max)
		case !utf8.ValidString(v):
			return fmt.Errorf("%s is not valid UTF-8", name)
		}
		return nil
	}
	for _, f := range []struct {
		name, v  string
		max      int
		required bool
	}{
		{"session", c.SessionID, maxIDBytes, true}, {"holder", c.Holder, maxIDBytes, false},
		{"interrupt", c.InterruptID, maxIDBytes, true}, {"choice", c.Choice, maxChoiceBytes, false},
		{"digest", c.Digest, maxDigestBytes, false}, {"channel", c.Channel, maxNameBytes, false},
		{"recipient", c.Recipient, maxNameBytes, false},
	} {
		if err := field(f.name, f.v, f.max, f.required); err != nil {
			return err
		}
	}
	switch c.Action {
	case Approve, Reject:
		if c.Digest == "" {
			return errors.New("an approval's link needs the approval's digest")
		}
		if c.Choice != "" {
			return errors.New("an approval's link takes no choice")
		}
	case Answer:
		if strings.TrimSpace(c.Choice) == "" {
			return errors.New("an answer's link needs its choice")
		}
	case Decline:
		if c.Choice != "" {
			return errors.New("a decline takes no choice")
		}
	default:
		return fmt.Errorf("unknown action %q (want approve, reject, answer or decline)", c.Action)
	}
	if c.Expires <= 0 {
		return errors.New("the expiry is required")
	}
	return nil
}

// Signer makes and reads tokens.
type Signer struct {
	keys [][]byte
}

// NewSigner returns a signer over keys, the first the signing one.
func NewSigner(keys ...[]byte) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("approval links: no key")
	}
	s := &Signer{}
	for i, k := range keys {
		if len(k) < MinKeyBytes {
			return nil, fmt.Errorf("approval links: key %d is %d bytes; it must be at least %d (try: openssl rand -hex 32)", i+1, len(k), MinKeyBytes)
		}
		s.keys = append(s.keys, bytes.Clone(k))
	}
	return s, nil
}

// Sign returns the token of c.
func (s *Signer) Sign(c Claims) (string, error) {
	if err := c.Check(); err != nil {
		return "", fmt.Errorf("approval link: %w", err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	head := Version + "." + base64.RawURLEncoding.EncodeToString(b)
	return head + "." + base64.RawURLEncoding.EncodeToString(mac(s.keys[0], head)), nil
}

// Errors of Parse. ErrExpired comes with the claims, so a page can say
// what the link was for.
var (
	ErrMalformed = errors.New("the link is not a Dex approval link (it was cut or changed)")
	ErrSignature = errors.New("the link's signature does not match (it was changed, or its key was retired)")
	ErrExpired   = errors.New("the link expired")
)

// Parse reads a token: its claims, once its signature matches one of the
// keys and its claims are sound. An expired link returns its claims with
// ErrExpired.
func (s *Signer) Parse(token string, now time.Time) (Claims, error) {
	if len(token) > MaxTokenBytes {
		return Claims{}, ErrMalformed
	}
	rest, ok := strings.CutPrefix(token, Version+".")
	if !ok {
		return Claims{}, ErrMalformed
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || payload == "" || strings.Contains(sig, ".") {
		return Claims{}, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return Claims{}, ErrMalformed
	}
	head := Version + "." + payload
	match := false
	for _, k := range s.keys {
		// Every key is tried, so the time taken does not say which matched.
		if hmac.Equal(got, mac(k, head)) {
			match = true
		}
	}
	if !match {
		return Claims{}, ErrSignature
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	var c Claims
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return Claims{}, ErrMalformed
	}
	if err := c.Check(); err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if now.Unix() >= c.Expires {
		return c, ErrExpired
	}
	return c, nil
}

func mac(key []byte, head string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("dex-approval-link-" + Version + "\x00"))
	h.Write([]byte(head))
	return h.Sum(nil)
}
