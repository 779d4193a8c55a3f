# mergebook: multi-stage build. `docker build -t mergebook .`, then see docker-compose.yml.
#
# Target CPU: x86-64-v3 (AVX2, BMI2), from .cargo/config.toml, the same flags as the
# benches in BENCHMARKS.md. On hosts older than Haswell (2013) the binary exits at start-up
# naming the instructions the CPU lacks.

FROM rust:1.95-bookworm AS build
WORKDIR /src

# Dependencies first, in their own layer: built against empty sources, so a change to
# src/ rebuilds only mergebook itself.
COPY Cargo.toml Cargo.lock build.rs ./
COPY .cargo .cargo
COPY proto proto
COPY crates crates
COPY scripts/build-release scripts/build-release
# Cargo needs every target of the manifest to exist: a placeholder for each [[bench]].
RUN mkdir -p src benches \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && for bench in $(awk '/^\[\[bench\]\]/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.toml); do \
      echo 'fn main() {}' > "benches/$bench.rs"; \
    done \
 && scripts/build-release \
 && rm -rf src benches

COPY src src
COPY benches benches
# The real sources are newer than the placeholders' build: touch makes sure cargo sees it.
RUN touch src/lib.rs src/main.rs && scripts/build-release

# Runtime: glibc and libgcc only, no shell, no package manager; runs as uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/mergebook /usr/local/bin/mergebook
# The example configs; mount your own over /etc/mergebook (docker-compose.yml does).
COPY config /etc/mergebook
USER nonroot
# Inside a container the network namespace is the boundary: listen on every interface of
# it, and publish the ports on the host's loopback (docker-compose.yml) or where needed.
ENV MERGEBOOK_CONFIG=/etc/mergebook/default.toml \
    MERGEBOOK_GRPC_LISTEN=0.0.0.0:50051 \
    MERGEBOOK_METRICS_LISTEN=0.0.0.0:9898 \
    MERGEBOOK_LOG_FORMAT=json \
    MERGEBOOK_HEALTHCHECK_ADDRESS=127.0.0.1:9898
# 50051: gRPC (OrderbookAggregator.BookSummary / BookSummaryExact)
EXPOSE 50051
# 9898: /metrics (Prometheus) and /health
EXPOSE 9898
# Healthy while /health answers 200: OK, or DEGRADED (some venue out, the book still live).
# DOWN (an instrument with no venue at all) answers 503. The first books take a few seconds.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/mergebook", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/mergebook"]
