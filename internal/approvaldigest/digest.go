// Package approvaldigest binds an approval to what it approves. Each
// approval interrupt carries a digest: an HMAC-SHA256, keyed by the
// operator's approval_digest key, over the session, the tool call's ID,
// the tool's name and the call's canonical arguments. A resolve_interrupt
// that carries a digest is refused unless it matches the call the session
// holds, so an approval shown for one set of arguments can never approve
// another (a stale page, or a runner that reuses call IDs across turns).
//
// The digest is computed outside the session's history: on the snapshot
// query, on the live interrupt_raised event, and in the resolve_interrupt
// validator, which the engine does not run on replay. The key never
// reaches a payload, so rotating it changes no replay.
package approvaldigest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Version prefixes every digest, so a later scheme can live beside this one.
const Version = "v1"

// MinKeyBytes is the shortest key accepted.
const MinKeyBytes = 16

// Subject is what an approval digest covers. ArgumentsRef is set instead
// of the full arguments when the session keeps them in the message store;
// the reference is the SHA-256 of the arguments, so it binds them as well.
type Subject struct {
	SessionID    string
	ToolCallID   string
	ToolName     string
	Arguments    string
	ArgumentsRef string
}

// Signer signs with its first key and verifies with any of them, so an
// operator rotates a key by adding the new one first and removing the old
// one once the approvals it signed are resolved.
type Signer struct {
	keys [][]byte
	// Required refuses a resolve_interrupt of an approval that carries no
	// digest; otherwise such a request is checked only for the rest.
	Required bool
}

// NewSigner returns a signer over keys, the first the signing one.
func NewSigner(required bool, keys ...[]byte) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("approval digest: no key")
	}
	s := &Signer{Required: required}
	for i, k := range keys {
		if len(k) < MinKeyBytes {
			return nil, fmt.Errorf("approval digest: key %d is %d bytes; it must be at least %d (try: openssl rand -hex 32)", i+1, len(k), MinKeyBytes)
		}
		s.keys = append(s.keys, bytes.Clone(k))
	}
	return s, nil
}

// Sign returns the digest of sub with the signing key: "v1." and the
// unpadded base64url HMAC.
func (s *Signer) Sign(sub Subject) string {
	return Version + "." + base64.RawURLEncoding.EncodeToString(mac(s.keys[0], sub))
}

// Verify reports whether digest is sub's under one of the keys.
func (s *Signer) Verify(sub Subject, digest string) bool {
	enc, ok := strings.CutPrefix(digest, Version+".")
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	ok = false
	for _, k := range s.keys {
		// Every key is tried, so the time taken does not say which matched.
		if hmac.Equal(got, mac(k, sub)) {
			ok = true
		}
	}
	return ok
}

// mac is the HMAC of the subject's fields, each length-prefixed so no two
// subjects share an encoding.
func mac(key []byte, sub Subject) []byte {
	h := hmac.New(sha256.New, key)
	args := "args:" + CanonicalArguments(sub.Arguments)
	if sub.ArgumentsRef != "" {
		args = "ref:" + sub.ArgumentsRef
	}
	for _, f := range []string{"dex-approval-" + Version, sub.SessionID, sub.ToolCallID, sub.ToolName, args} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return h.Sum(nil)
}

// CanonicalArguments returns the arguments as compact JSON with object
// keys sorted and numbers as written, so two encodings of the same
// arguments (spacing, key order) digest alike. Arguments that are not one
// JSON value are used as they are.
func CanonicalArguments(args string) string {
	d := json.NewDecoder(strings.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return args
	}
	if _, err := d.Token(); err != io.EOF {
		return args // trailing data: not one value
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return args
	}
	return strings.TrimSuffix(b.String(), "\n")
}
