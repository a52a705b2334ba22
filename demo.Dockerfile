# The demo workload (cmd/hsi-demo) for the docker-compose stack.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/hsi-demo ./cmd/hsi-demo
COPY internal/gpusim ./internal/gpusim
RUN CGO_ENABLED=0 go build -o /hsi-demo ./cmd/hsi-demo

FROM gcr.io/distroless/static-debian12
COPY --from=build /hsi-demo /hsi-demo
ENTRYPOINT ["/hsi-demo"]
