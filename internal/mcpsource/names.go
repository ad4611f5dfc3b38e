package mcpsource

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolNameLen is the longest tool name offered to a model (the limit of
// the model providers' function names).
const MaxToolNameLen = 64

// nameSeparator joins a server's name and its tool's MCP name.
const nameSeparator = "__"

// hashLen is how many hex digits of the SHA-256 a shortened name keeps.
const hashLen = 8

// ToolName returns the name under which the tool mcpName of server is
// offered: "<server>__<tool>", with every character other than an ASCII
// letter, digit, '_' or '-' replaced by '_' (one '_' per character, and per
// byte of invalid UTF-8). A name longer than [MaxToolNameLen] keeps its first
// 55 characters, then '_' and the first 8 hex digits of the SHA-256 of the
// unsanitized "<server>__<tool>", so two long names that differ anywhere,
// even only in a replaced character, stay apart.
func ToolName(server, mcpName string) string {
	raw := server + nameSeparator + mcpName
	var b strings.Builder
	b.Grow(len(raw))
	for _, r := range raw {
		if isNameChar(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= MaxToolNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(raw))
	keep := MaxToolNameLen - 1 - hashLen
	return name[:keep] + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

func isNameChar(r rune) bool {
	return r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
}
