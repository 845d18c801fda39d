# Foresight's image: the router (bin/foresight) and its Go plugin binaries (bin/plugins/<stage>),
# all built from this repository's sources by `make build`, on a distroless base as a non-root
# user. The Helm chart in deploy/helm/foresight runs it:
#
#   docker build -t foresight:$(cat VERSION) .
#
# Every RUN step is a command that was run by hand on the project's machine (Debian 12, go1.26.8,
# Node 20) before it was written here, in the same order, in a fresh copy of the sources.

# The Go the project builds and tests with: go.mod's go line, the same minor release (the test in
# deploy/ checks it).
ARG GO_VERSION=1.26.8

# Debian 13: its Node is 20, which the TypeScript plugin kit requires (engines >=20; Debian 12's is 18).
FROM golang:${GO_VERSION}-trixie AS build
WORKDIR /src
# What make build needs beyond Go, from Debian's packages (Node and npm for the TypeScript example
# plugin, gcc, protoc, Python with gRPC): the script the Makefile's system-tools target runs, alone
# first so that the layer is cached across source changes.
COPY tools/system-deps.sh tools/
RUN tools/system-deps.sh
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static binaries: the runtime image has no C library.
ENV CGO_ENABLED=0
# Everything, as `make build` builds it. The TypeScript example plugin then leaves: it runs on
# Node, which the runtime image does not carry (a config that uses it needs an image with Node).
RUN make build && rm -rf bin/plugins/ts-filter

FROM gcr.io/distroless/static-debian12:nonroot
# The chart's config names the plugins as /opt/foresight/bin/plugins/<stage>.
COPY --from=build /src/bin/ /opt/foresight/bin/
# distroless's nonroot user, by number so the kubelet can verify runAsNonRoot.
USER 65532:65532
# ext_proc (gRPC, with the gRPC health service), the OpenAI API, the admin listener.
EXPOSE 9002 8080 9090
ENTRYPOINT ["/opt/foresight/bin/foresight"]
CMD ["serve", "--config", "/etc/foresight/config.yaml", "--ext-proc", "0.0.0.0:9002"]
