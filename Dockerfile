# Images of both binaries (they cannot be built on the project's own machines,
# which have no Docker engine):
#   docker build --target koord-queue -t koord-queue .
#   docker build --target koord-queue-controllers -t koord-queue-controllers .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY apis/ apis/
COPY cmd/ cmd/
COPY pkg/ pkg/
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/koord-queue ./cmd/queue && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/koord-queue-controllers ./cmd/extensions

FROM gcr.io/distroless/static:nonroot AS koord-queue
COPY --from=build /out/koord-queue /koord-queue
USER 65532:65532
ENTRYPOINT ["/koord-queue"]

FROM gcr.io/distroless/static:nonroot AS koord-queue-controllers
COPY --from=build /out/koord-queue-controllers /koord-queue-controllers
USER 65532:65532
ENTRYPOINT ["/koord-queue-controllers"]
