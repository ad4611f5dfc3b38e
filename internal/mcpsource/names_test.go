package mcpsource

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

var validToolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 70)
	hash := func(raw string) string {
		s := sha256.Sum256([]byte(raw))
		return hex.EncodeToString(s[:])[:8]
	}
	tests := []struct {
		name, server, tool, want string
	}{
		{"plain", "files", "read_file", "files__read_file"},
		{"dash kept", "my-server", "get-item", "my-server__get-item"},
		{"dot and slash replaced", "files", "fs.read/all", "files__fs_read_all"},
		{"space and colon replaced", "tick ets", "a:b", "tick_ets__a_b"},
		{"one underscore per non-ASCII rune", "srv", "héllo€", "srv__h_llo_"},
		{"one underscore per invalid byte", "srv", "a\xff\xfeb", "srv__a__b"},
		{"empty tool", "srv", "", "srv__"},
		{"exactly 64 kept", "s", strings.Repeat("t", 61), "s__" + strings.Repeat("t", 61)},
		{"65 shortened", "s", strings.Repeat("t", 62), "s__" + strings.Repeat("t", 52) + "_" + hash("s__"+strings.Repeat("t", 62))},
		{"long shortened with hash of the raw name", "srv", long, ("srv__" + long)[:55] + "_" + hash("srv__"+long)},
		{"long with a replaced character hashes the raw name", "srv", long + ".", ("srv__" + long)[:55] + "_" + hash("srv__"+long+".")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ToolName(tt.server, tt.tool)
			if got != tt.want {
				t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
			}
			if !validToolName.MatchString(got) {
				t.Errorf("ToolName(%q, %q) = %q is not a valid tool name", tt.server, tt.tool, got)
			}
		})
	}
	// Two long names that sanitize alike stay apart.
	if a, b := ToolName("srv", long+"."), ToolName("srv", long+"_"); a == b {
		t.Errorf("%q and %q both became %q", long+".", long+"_", a)
	}
}

func FuzzToolName(f *testing.F) {
	f.Add("files", "read_file")
	f.Add("srv", strings.Repeat("é", 40))
	f.Add("", "")
	f.Add("a b", "c\xffd")
	f.Fuzz(func(t *testing.T, server, tool string) {
		got := ToolName(server, tool)
		if !validToolName.MatchString(got) {
			t.Fatalf("ToolName(%q, %q) = %q is not a valid tool name", server, tool, got)
		}
		if again := ToolName(server, tool); again != got {
			t.Fatalf("ToolName is not deterministic: %q then %q", got, again)
		}
		raw := server + "__" + tool
		if len(got) < MaxToolNameLen && len(got) != len([]rune(raw)) {
			t.Fatalf("ToolName(%q, %q) = %q: a short name must keep one character per character", server, tool, got)
		}
		if len([]rune(raw)) <= MaxToolNameLen {
			for i, r := range []rune(raw) {
				if isNameChar(r) && rune(got[i]) != r {
					t.Fatalf("ToolName(%q, %q) = %q changed the valid character %q at %d", server, tool, got, r, i)
				}
			}
		}
	})
}
