package sse

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Event is one dispatched event.
type Event struct {
	// ID is the last event ID when the event was dispatched: the value of the
	// latest id field, in this frame or an earlier one.
	ID string
	// Type is the event field; empty means "message".
	Type string
	// Data is the event's data lines joined by "\n".
	Data string
}

// Limits of a Reader.
const (
	// MaxLineBytes bounds one line.
	MaxLineBytes = 1 << 20
	// MaxDataBytes bounds the data of one event.
	MaxDataBytes = 8 << 20
)

// ErrTooLarge reports a line or an event over the limits.
var ErrTooLarge = errors.New("sse: line or event too large")

// Reader reads events from a stream.
type Reader struct {
	r       *bufio.Reader
	idBuf   string // the latest id field
	lastID  string // idBuf as of the latest blank line
	skipLF  bool   // the previous line ended in CR: a following LF is part of it
	started bool
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReader(r)} }

// LastEventID is the value of the latest id field of a complete frame (one
// ended by its blank line), including a frame without data. An id in a frame
// cut off by the end of the stream does not count, so a reconnect repeats
// that frame instead of skipping it.
func (r *Reader) LastEventID() string { return r.lastID }

// Next returns the next event. It returns io.EOF when the stream ends; an
// unterminated frame at the end is dropped, as the standard says.
func (r *Reader) Next() (Event, error) {
	var data strings.Builder
	hasData := false
	typ := ""
	for {
		line, err := r.readLine()
		if err != nil {
			return Event{}, err
		}
		if line == "" {
			r.lastID = r.idBuf
			if !hasData {
				typ = ""
				continue
			}
			d := data.String()
			return Event{ID: r.lastID, Type: typ, Data: d[:len(d)-1]}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, ""
		if i := strings.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], strings.TrimPrefix(line[i+1:], " ")
		}
		switch field {
		case "data":
			if data.Len()+len(value)+1 > MaxDataBytes {
				return Event{}, ErrTooLarge
			}
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "event":
			typ = value
		case "id":
			if !strings.ContainsRune(value, 0) {
				r.idBuf = value
			}
		}
		// "retry" and unknown fields are ignored.
	}
}

func (r *Reader) readLine() (string, error) {
	var buf []byte
	for {
		b, err := r.r.ReadByte()
		if err != nil {
			return "", err
		}
		if r.skipLF {
			r.skipLF = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\r':
			r.skipLF = true
			return r.line(buf), nil
		case '\n':
			return r.line(buf), nil
		}
		if len(buf) >= MaxLineBytes {
			return "", ErrTooLarge
		}
		buf = append(buf, b)
	}
}

// line returns buf as a string, without the byte order mark that may open
// the stream.
func (r *Reader) line(buf []byte) string {
	s := string(buf)
	if !r.started {
		r.started = true
		s = strings.TrimPrefix(s, "\uFEFF")
	}
	return s
}

// Write writes ev as one frame. It always writes the id field, so a reader's
// last event ID becomes ev.ID, and splits Data at line breaks (CRLF, LF or
// CR) into data lines. ID must not hold a line break or NUL, nor Type a line
// break.
func Write(w io.Writer, ev Event) error {
	if strings.ContainsAny(ev.ID, "\r\n\x00") {
		return fmt.Errorf("sse: event ID %q holds a line break or NUL", ev.ID)
	}
	if strings.ContainsAny(ev.Type, "\r\n") {
		return fmt.Errorf("sse: event type %q holds a line break", ev.Type)
	}
	var b strings.Builder
	b.WriteString("id: ")
	b.WriteString(ev.ID)
	b.WriteByte('\n')
	if ev.Type != "" {
		b.WriteString("event: ")
		b.WriteString(ev.Type)
		b.WriteByte('\n')
	}
	for _, line := range SplitLines(ev.Data) {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// SplitLines splits s at CRLF, LF and CR, as a reader splits a stream. It
// returns one empty line for an empty s.
func SplitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}
