package client

import (
	"strings"
	"testing"
)

func TestCheckMessageID(t *testing.T) {
	for _, tt := range []struct {
		id, err string
	}{
		{id: "m-1"},
		{id: "01J9Z7K3V5W8X2Y4A6B8C0D2E4"},
		{id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301"},
		{id: "client:42.retry_1"},
		{id: strings.Repeat("m", MaxMessageIDLength)},
		{id: "", err: "message ID must be 1 to 128 characters"},
		{id: strings.Repeat("m", MaxMessageIDLength+1), err: "message ID must be 1 to 128 characters"},
		{id: "a b", err: `message ID "a b" has ' ': use letters, digits, '-', '_', '.' and ':'`},
		{id: "a/b", err: `message ID "a/b" has '/'`},
		{id: "é", err: `message ID "é" has 'é'`},
	} {
		err := CheckMessageID(tt.id)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)) {
			t.Errorf("CheckMessageID(%q) = %v, want %q", tt.id, err, tt.err)
		}
	}
}
