# ardgate: the default image has Node.js, so npx can launch npm stdio
# servers; the "slim" target is a static binary on distroless, for
# remote-only setups (no stdio packages).
#
#   docker build -t ardgate .
#   docker build --target slim -t ardgate:slim .
#   docker run -p 7333:7333 ardgate

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# The build line below is also run by the tests (TestDockerfile), outside Docker.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ardgate .

FROM gcr.io/distroless/static-debian12:nonroot AS slim
COPY --from=build /out/ardgate /ardgate
USER nonroot:nonroot
EXPOSE 7333
ENTRYPOINT ["/ardgate"]
CMD ["serve", "--transport", "http", "--addr", "0.0.0.0:7333"]

FROM node:20-bookworm-slim AS default
RUN groupadd --system ardgate && useradd --system --gid ardgate --create-home ardgate
COPY --from=build /out/ardgate /usr/local/bin/ardgate
USER ardgate
WORKDIR /home/ardgate
EXPOSE 7333
ENTRYPOINT ["/usr/local/bin/ardgate"]
CMD ["serve", "--transport", "http", "--addr", "0.0.0.0:7333"]
