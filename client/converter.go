package client

import (
	"bytes"
	"encoding/json"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// DataConverter returns the data converter sessions use: Temporal's
// default, except that JSON is written without HTML escaping. Go's
// encoding/json turns "<", ">" and "&" into six bytes each by default, so a
// message of 1 MiB of HTML would take 6 MiB of history and pass the
// engine's 2 MiB payload limit. The encoding stays "json/plain", so every
// Temporal SDK reads these payloads, and this converter reads payloads
// written with the default one. Give it to the clients that start and
// drive sessions (client.Options.DataConverter) as the worker does.
func DataConverter() converter.DataConverter { return dataConverter }

var dataConverter = converter.NewCompositeDataConverter(
	converter.NewNilPayloadConverter(),
	converter.NewByteSlicePayloadConverter(),
	converter.NewProtoJSONPayloadConverter(),
	converter.NewProtoPayloadConverter(),
	jsonPayloadConverter{},
)

// jsonPayloadConverter is converter.JSONPayloadConverter without HTML
// escaping.
type jsonPayloadConverter struct{}

func (jsonPayloadConverter) ToPayload(value any) (*commonpb.Payload, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return nil, fmt.Errorf("%w: %v", converter.ErrUnableToEncode, err)
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return &commonpb.Payload{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)},
		Data:     data,
	}, nil
}

func (jsonPayloadConverter) FromPayload(payload *commonpb.Payload, valuePtr any) error {
	if err := json.Unmarshal(payload.GetData(), valuePtr); err != nil {
		return fmt.Errorf("%w: %v", converter.ErrUnableToDecode, err)
	}
	return nil
}

func (jsonPayloadConverter) ToString(payload *commonpb.Payload) string {
	return string(payload.GetData())
}

func (jsonPayloadConverter) Encoding() string { return converter.MetadataEncodingJSON }
