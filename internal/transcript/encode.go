package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// The store writes a message as its JSON object (the pluginapi.Message wire
// names) without HTML escaping, and a chunk as the JSON array of its
// messages, with no white space. Go's encoding/json would write <, > and &
// as six bytes each (\u003c); the encoder here keeps them one byte, so a
// message's size is what it looks like and the caps mean what they say.

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// appendMessage appends the encoding of m to buf.
func appendMessage(buf *bytes.Buffer, m *Message) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	// A Message holds only strings and an integer: encoding cannot fail.
	if err := enc.Encode(m); err != nil {
		panic("transcript: encoding a message: " + err.Error())
	}
	buf.Truncate(buf.Len() - 1) // Encode ends with a newline
}

// encodeMessage returns the encoding of m, the bytes of its window row.
func encodeMessage(m *Message) []byte {
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	buf.Reset()
	appendMessage(buf, m)
	return bytes.Clone(buf.Bytes())
}

func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 { // do not pin large buffers
		bufPool.Put(buf)
	}
}

// EncodedSize returns the size in bytes of m's JSON encoding as the store
// writes it: the size that MaxMessageBytes and the chunk limits count.
func EncodedSize(m Message) int {
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	buf.Reset()
	appendMessage(buf, &m)
	return buf.Len()
}

// joinChunk returns the encoding of a chunk from the encodings of its
// messages: [m1,m2,...].
func joinChunk(encoded [][]byte) []byte {
	n := 1
	for _, e := range encoded {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range encoded {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
}

// Split cuts msgs, in order, into chunks of at most size messages whose
// encoding (the JSON array the store writes: 2 bytes, plus each message's
// EncodedSize, plus a comma between messages) is at most maxBytes. A
// message too large for maxBytes on its own forms a chunk of its own. The
// result is a pure function of its arguments, so a retried Step cuts the
// same chunks; the chunks are sub-slices of msgs. A size below 1 means
// DefaultChunkSize, a maxBytes below 1 means DefaultChunkMaxBytes, and
// maxBytes is at most MaxChunkBytes.
func Split(msgs []Message, size, maxBytes int) [][]Message {
	if size < 1 {
		size = DefaultChunkSize
	}
	if maxBytes < 1 {
		maxBytes = DefaultChunkMaxBytes
	}
	maxBytes = min(maxBytes, MaxChunkBytes)
	var out [][]Message
	start, n := 0, 1 // n counts the chunk's bytes so far, "[" included
	for i := range msgs {
		add := EncodedSize(msgs[i]) + 1 // the message and the "," or "]" after it
		if i > start && (i-start == size || n+add > maxBytes) {
			out = append(out, msgs[start:i:i])
			start, n = i, 1
		}
		n += add
	}
	if start < len(msgs) {
		out = append(out, msgs[start:len(msgs):len(msgs)])
	}
	return out
}

// checkText reports whether every string of m is valid UTF-8. JSON cannot
// carry other bytes: the encoder would replace them, and the message read
// back would differ from the one written.
func checkText(m *Message) bool {
	for _, s := range []string{string(m.Role), m.Text, m.Item, m.ToolCallID, m.ToolName, m.TurnID, string(m.ToolStatus)} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// encodeWrite checks msgs for a write to session and returns their
// encodings. Sequences must be >= 1 and strictly increasing, consecutive
// when consecutive is set. It checks every message before it returns, so a
// write that fails here has written nothing.
func encodeWrite(session string, msgs []Message, consecutive bool) ([][]byte, error) {
	out := make([][]byte, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Sequence < 1:
			return nil, fmt.Errorf("%w: session %q: message sequence %d (sequences start at 1)", ErrInvalid, session, m.Sequence)
		case i > 0 && consecutive && m.Sequence != msgs[i-1].Sequence+1:
			return nil, fmt.Errorf("%w: session %q: a chunk's sequences must be consecutive, got %d after %d", ErrInvalid, session, m.Sequence, msgs[i-1].Sequence)
		case i > 0 && m.Sequence <= msgs[i-1].Sequence:
			return nil, fmt.Errorf("%w: session %q: sequences must increase, got %d after %d", ErrInvalid, session, m.Sequence, msgs[i-1].Sequence)
		case !checkText(m):
			return nil, fmt.Errorf("%w: session %q: message %d has text that is not valid UTF-8", ErrInvalid, session, m.Sequence)
		}
		out[i] = encodeMessage(m)
		if len(out[i]) > MaxMessageBytes {
			return nil, fmt.Errorf("%w: session %q: message %d encodes to %d bytes, over the cap of %d bytes", ErrTooLarge, session, m.Sequence, len(out[i]), MaxMessageBytes)
		}
	}
	return out, nil
}

// encodeChunk checks msgs as a chunk of session and returns its encoding
// and ref.
func encodeChunk(session string, msgs []Message) ([]byte, ChunkRef, error) {
	if len(msgs) == 0 {
		return nil, ChunkRef{}, fmt.Errorf("%w: session %q: a chunk needs at least one message", ErrInvalid, session)
	}
	encoded, err := encodeWrite(session, msgs, true)
	if err != nil {
		return nil, ChunkRef{}, err
	}
	data := joinChunk(encoded)
	if len(msgs) > 1 && len(data) > MaxChunkBytes {
		return nil, ChunkRef{}, fmt.Errorf("%w: session %q: the chunk of messages %d to %d encodes to %d bytes, over the cap of %d bytes (cut chunks with Split)",
			ErrTooLarge, session, msgs[0].Sequence, msgs[len(msgs)-1].Sequence, len(data), MaxChunkBytes)
	}
	ref := ChunkRef{First: msgs[0].Sequence, Last: msgs[len(msgs)-1].Sequence, Count: len(msgs), Bytes: int64(len(data))}
	return data, ref, nil
}

// decodeMessage decodes one window row strictly: one JSON object with only
// the Message fields, nothing after it, valid UTF-8, a sequence >= 1.
func decodeMessage(data []byte) (Message, error) {
	var m Message
	if !utf8.Valid(data) {
		return m, fmt.Errorf("%w: a message is not valid UTF-8", ErrCorrupt)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: a message does not decode: %v", ErrCorrupt, err)
	}
	if err := expectEOF(dec); err != nil {
		return m, err
	}
	if m.Sequence < 1 { // also a JSON null
		return m, fmt.Errorf("%w: a message has sequence %d", ErrCorrupt, m.Sequence)
	}
	return m, nil
}

// decodeChunk decodes a chunk strictly: a JSON array of at least one
// message object with only the Message fields, nothing after it, valid
// UTF-8, consecutive sequences from at least 1.
func decodeChunk(data []byte) ([]Message, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: a chunk is not valid UTF-8", ErrCorrupt)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%w: a chunk is not a JSON array", ErrCorrupt)
	}
	var msgs []Message
	for dec.More() {
		var m Message
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%w: message %d of a chunk does not decode: %v", ErrCorrupt, len(msgs), err)
		}
		switch n := len(msgs); {
		case m.Sequence < 1:
			return nil, fmt.Errorf("%w: message %d of a chunk has sequence %d", ErrCorrupt, n, m.Sequence)
		case n > 0 && m.Sequence != msgs[n-1].Sequence+1:
			return nil, fmt.Errorf("%w: a chunk's sequence %d follows %d", ErrCorrupt, m.Sequence, msgs[n-1].Sequence)
		}
		msgs = append(msgs, m)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, fmt.Errorf("%w: a chunk's array does not end", ErrCorrupt)
	}
	if err := expectEOF(dec); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: an empty chunk", ErrCorrupt)
	}
	return msgs, nil
}

func expectEOF(dec *json.Decoder) error {
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: data after the JSON value", ErrCorrupt)
	}
	return nil
}

// blobRef returns the reference of data: "sha256:" and its hex digest.
func blobRef(data []byte) string {
	sum := sha256.Sum256(data)
	return refPrefix + hex.EncodeToString(sum[:])
}

const refPrefix = "sha256:"

// checkRef validates a blob reference.
func checkRef(ref string) error {
	hexPart, ok := strings.CutPrefix(ref, refPrefix)
	if !ok || len(hexPart) != sha256.Size*2 || strings.ToLower(hexPart) != hexPart {
		return fmt.Errorf("%w: blob reference %q (want sha256:<64 lowercase hex digits>)", ErrInvalid, ref)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return fmt.Errorf("%w: blob reference %q (want sha256:<64 lowercase hex digits>)", ErrInvalid, ref)
	}
	return nil
}

// checkBlob validates data for PutBlob.
func checkBlob(session string, data []byte) error {
	if len(data) > MaxMessageBytes {
		return fmt.Errorf("%w: session %q: a blob of %d bytes, over the cap of %d bytes", ErrTooLarge, session, len(data), MaxMessageBytes)
	}
	return nil
}
