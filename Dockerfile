# syntax=docker/dockerfile:1
# Build: docker build -t dbeacon .
# Run:   docker run -p 8080:8080 -v dbeacon-data:/data -e DBEACON_ADMIN_TOKEN=change-me dbeacon
#        (add `serve --host 0.0.0.0 --samples /opt/dbeacon/samples` as the command to load the samples)

FROM swift:6.3.1-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libsqlite3-dev libspatialite-dev libgeos-dev libproj-dev libsqlite3-mod-spatialite \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
COPY Sources Sources
COPY Tests Tests
RUN swift build -c release --product dbeacon --static-swift-stdlib \
 && cp "$(swift build -c release --show-bin-path)/dbeacon" /usr/local/bin/dbeacon

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libsqlite3-0 libspatialite7 libgeos-c1v5 libproj25 libsqlite3-mod-spatialite libjs-leaflet ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /data dbeacon && mkdir -p /data && chown dbeacon /data
COPY --from=build /usr/local/bin/dbeacon /usr/local/bin/dbeacon
COPY samples /opt/dbeacon/samples
USER dbeacon
VOLUME /data
ENV DBEACON_DB=/data/dbeacon.sqlite
EXPOSE 8080
# Liveness: /healthz (the process answers). A load balancer should use /readyz instead, which is
# 503 while the database is unreachable or the PostgreSQL change feed is down or catching up, so
# the node is drained rather than restarted (docs/scaling.md, "When the database fails").
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["dbeacon"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
