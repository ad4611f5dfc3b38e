package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	commonpb "go.temporal.io/api/common/v1"

	"github.com/dex-agents/dex-agent-worker/wire"
)

func commonExecution(id string) *commonpb.WorkflowExecution {
	return &commonpb.WorkflowExecution{WorkflowId: id}
}

// decodeBody decodes a JSON object strictly: a size limit, no unknown
// fields, nothing after the object.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeBodyLimit(w, r, v, MaxBodyBytes)
}

// decodeBodyLimit is decodeBody with a route's own size limit.
func decodeBodyLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	body, err := readJSONBody(w, r, limit)
	if err != nil {
		return err
	}
	return decodeJSON(body, v)
}

// readJSONBody reads a JSON request body of at most limit bytes.
func readJSONBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return nil, errorf(http.StatusUnsupportedMediaType, "bad_request", "Content-Type must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errorf(http.StatusRequestEntityTooLarge, "payload_too_large", "the body is larger than %d bytes", limit)
		}
		return nil, errorf(http.StatusBadRequest, "bad_request", "read the body: %v", err)
	}
	return body, nil
}

// decodeLenientBodyLimit decodes a body whose shape another project owns
// (the AI SDK's chat request): fields the server does not read are
// ignored, the rest as decodeBodyLimit.
func decodeLenientBodyLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	body, err := readJSONBody(w, r, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errorf(http.StatusBadRequest, "bad_request", "invalid JSON body: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// decodeJSON is the strict decoder of request bodies.
func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return errorf(http.StatusBadRequest, "bad_request", "the body must be a JSON object")
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		return errorf(http.StatusBadRequest, "bad_request", "invalid JSON body: %s", msg)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "bad_request", "invalid JSON body: data after the object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, "bad_request", "invalid JSON body: data after the object")
	}
	return nil
}

// DefaultPageSize is the page size of GET .../messages without a limit.
const DefaultPageSize = wire.DefaultMessagesPageSize

func parseListQuery(q url.Values) (wire.ListMessagesRequest, error) {
	req := wire.ListMessagesRequest{Limit: DefaultPageSize}
	for key := range q {
		if key != "before_sequence" && key != "limit" {
			return req, errorf(http.StatusBadRequest, "bad_request", "unknown query parameter %q", key)
		}
	}
	if v := q.Get("before_sequence"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return req, errorf(http.StatusBadRequest, "bad_request", "before_sequence must be a non-negative integer")
		}
		req.BeforeSequence = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return req, errorf(http.StatusBadRequest, "bad_request", "limit must be an integer (it is clamped to 1..200)")
		}
		// As list_agent_messages does: a limit outside 1..200 is clamped,
		// not refused.
		req.Limit = int(min(max(n, 1), int64(wire.MaxMessagesPageSize)))
	}
	return req, nil
}
