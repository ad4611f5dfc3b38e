# syntax=docker/dockerfile:1
# Multi-stage build of the worker and its bundled runner plugins, with the
# same build steps as `make build`.
FROM golang:1.26-bookworm AS build
ENV GOTOOLCHAIN=go1.27.3 CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
COPY pluginapi/go.mod pluginapi/go.sum ./pluginapi/
RUN go mod download
COPY . .
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/dex-agent-worker ./cmd/dex-agent-worker \
 && go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/dex-runner-stepwise ./plugins/stepwise/cmd/dex-runner-stepwise \
 && go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/dex-runner-orders ./examples/orders

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER nonroot:nonroot
WORKDIR /var/lib/dex-agent-worker
ENTRYPOINT ["/usr/local/bin/dex-agent-worker", "run", "--config", "/etc/dex-agent-worker/config.yaml"]
