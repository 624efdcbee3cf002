import DBeaconCore
import DBeaconServices
import Hummingbird
import Prometheus
import Synchronization

/// Prometheus metrics of one application instance (a registry of its own, so tests that
/// build several apps in one process do not collide).
package final class AppMetrics: Sendable {
    /// This instance's registry, which `exposition` renders.
    let registry = PrometheusCollectorRegistry()
    private let beaconsGauge: Gauge
    private let pendingGauge: Gauge
    private let feedConnected: Gauge
    private let feedLag: Gauge
    private let feedReconnections: Gauge

    package init() {
        beaconsGauge = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "dbeacon", metricName: "beacons", unitName: "count", helpText: "Stored beacons"))
        pendingGauge = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "dbeacon", metricName: "index_pending_polygons", unitName: "count",
            helpText: "Polygons whose exact test the in-memory index is still preparing after start-up"))
        feedConnected = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "dbeacon", metricName: "change_feed_connected", unitName: "",
            helpText: "1 while the PostgreSQL change feed is connected and caught up (always 1 on SpatiaLite)"))
        feedLag = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "dbeacon", metricName: "change_feed_lag", unitName: "seconds",
            helpText: "Age of the oldest change notification received but not yet applied"))
        feedReconnections = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "dbeacon", metricName: "change_feed_reconnections", unitName: "total",
            helpText: "Times the change feed reconnected (each followed by a resync)"))
    }

    /// A request refused by a rate limit (`dbeacon_rate_limited_total{category}`).
    func rateLimited(_ category: RateLimiter.Category) {
        registry.makeCounter(descriptor: MetricNameDescriptor(
            namespace: "dbeacon", metricName: "rate_limited", unitName: "total", helpText: "Requests refused by a rate limit"),
            labels: [("category", category.rawValue)]).increment()
    }

    /// A connection closed at once because its client address held too many.
    func connectionRefused() {
        registry.makeCounter(descriptor: MetricNameDescriptor(
            namespace: "dbeacon", metricName: "connections_refused", unitName: "total",
            helpText: "Connections closed because their client held too many")).increment()
    }

    /// Counts one request (`dbeacon_http_requests_total{method,path,status}`) and its latency
    /// (`dbeacon_http_request_duration_seconds{method,path}`); `path` is the route template, so the
    /// label sets stay few.
    func record(method: String, path: String, status: Int, seconds: Double) {
        let key = RouteKey(method: method, path: path, status: status)
        let metrics = routes.withLock { $0[key] } ?? routes.withLock { routes in
            // The registry's lookup (names built, labels compared under its lock) once per route
            // and status, not per request.
            if let known = routes[key] { return known }
            let made = RouteMetrics(
                requests: registry.makeCounter(descriptor: MetricNameDescriptor(
                    namespace: "dbeacon", metricName: "http_requests", unitName: "total", helpText: "HTTP requests"),
                    labels: [("method", method), ("path", path), ("status", String(status))]),
                duration: registry.makeValueHistogram(descriptor: MetricNameDescriptor(
                    namespace: "dbeacon", metricName: "http_request_duration", unitName: "seconds", helpText: "HTTP request latency"),
                    labels: [("method", method), ("path", path)],
                    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]))
            routes[key] = made
            return made
        }
        metrics.requests.increment()
        metrics.duration.record(seconds)
    }

    private struct RouteKey: Hashable { let method: String, path: String, status: Int }
    private struct RouteMetrics: Sendable { let requests: Counter, duration: ValueHistogram }
    /// Route templates and statuses are few (the router's), so this stays small.
    private let routes = Mutex<[RouteKey: RouteMetrics]>([:])

    /// The text `/metrics` answers: the gauges set from `health` now (beacons stored, pending
    /// polygons, the change feed's state), then every metric in the Prometheus text format.
    func exposition(_ health: NodeHealth) async throws -> String {
        beaconsGauge.set(Double(try await health.beaconCount()))
        pendingGauge.set(Double(health.pendingPolygons))
        let feed = health.feed
        feedConnected.set(feed.map { $0.isCurrent ? 1.0 : 0.0 } ?? 1)
        feedLag.set(feed?.lagSeconds ?? 0)
        feedReconnections.set(Double(feed?.reconnections ?? 0))
        return registry.emitToString()
    }
}

/// Counts requests and their latency per route template.
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: AppMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        let seconds = elapsed.inSeconds
        metrics.record(method: request.method.rawValue, path: context.endpointPath ?? "unmatched",
                       status: response.status.code, seconds: seconds)
        return response
    }
}
