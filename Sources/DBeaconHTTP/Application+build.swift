import DBeaconCore
import DBeaconIndex
import DBeaconServices
import DBeaconStore
package import Hummingbird
import HummingbirdCore
package import Logging

/// Builds the HTTP application on already-made services (tests use this with a test config).
package func buildApplication(_ services: AppServices, logger: Logger) -> some ApplicationProtocol {
    let metrics = AppMetrics()
    let router = buildRouter(services, metrics: metrics)
    let limits = services.config.connections
    let counter = ClientConnectionCounter(maxPerClient: limits.maxConnectionsPerClient) { metrics.connectionRefused() }
    let maxConnections = min(limits.maxConnections, DescriptorLimit.raiseForConnections())
    return Application(
        router: router,
        server: .http1(configuration: HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionGuard(limits: limits, counter: counter)])),
        configuration: .init(address: .hostname(services.config.host, port: services.config.port), serverName: "dbeacon",
                             availableConnectionsDelegate: MaximumAvailableConnections(maxConnections, logger: logger)),
        services: services.backgroundServices,
        logger: logger
    )
}

/// Opens the database and builds the application described by `config`.
package func buildApplication(_ config: AppConfig, logger: Logger) async throws -> some ApplicationProtocol {
    let services = try await AppServices.make(config, logger: logger)
    if let token = services.generatedAdminToken {
        print("Generated admin token (shown only this once; store it safely): \(token)")
    }
    return buildApplication(services, logger: logger)
}

/// All routes: operations and the map console at the root, the API under `/v1` behind bearer
/// authentication.
package func buildRouter(_ services: AppServices, metrics: AppMetrics = AppMetrics()) -> Router<AppRequestContext> {
    // Every GET route answers HEAD too (RFC 9110 §9.3.2): the GET handler's status and headers, no body.
    let router = Router(context: AppRequestContext.self, options: .autoGenerateHeadEndpoints)
    let limiter = RateLimiter(services.config.rateLimits, refused: { metrics.rateLimited($0) })
    let methods = RouteMethods()
    router.add(middleware: ErrorMiddleware(methods: methods))
    router.add(middleware: MetricsMiddleware(metrics: metrics))
    router.add(middleware: RequestLogMiddleware())
    // PostgreSQL is reached over the network and can stop answering; the embedded store cannot
    // (its waits are SQLite's busy timeout), and its hot paths keep the two tasks per request.
    if StoreLocation.isPostgres(services.config.databasePath) {
        router.add(middleware: RequestDeadlineMiddleware(seconds: services.config.databaseTimeoutSeconds + 1))
    }
    let memory = services.engine as? MemoryCoverageEngine
    OperationsController(store: services.store, metrics: metrics, auth: services.auth,
                         metricsToken: services.config.metricsToken,
                         readinessDeadline: DatabaseDeadline(seconds: min(services.config.readinessTimeoutSeconds, services.config.databaseTimeoutSeconds)), pendingPolygons: { memory?.pendingCount ?? 0 }).addRoutes(to: router)
    ConsoleController(config: services.config.console, logger: Logger(label: "dbeacon.console")).addRoutes(to: router)

    let v1 = router.group("v1")
        .add(middleware: AuthMiddleware(auth: services.auth, limiter: limiter))
        .group(context: AuthenticatedContext.self)
        .add(middleware: RateLimitMiddleware(limiter: limiter))
    let maxBody = services.config.maxBodyBytes
    UserController(auth: services.auth, accounts: services.accounts, maxBodyBytes: maxBody).addRoutes(to: v1)
    TagController(beacons: services.beacons, maxBodyBytes: maxBody).addRoutes(to: v1)
    BeaconController(beacons: services.beacons, maxBodyBytes: maxBody, maxImportBytes: services.config.maxImportBytes).addRoutes(to: v1)
    let regions = RegionService(beacons: services.beacons, registry: services.store)
    LiveController(fences: services.fences, regions: regions, feed: services.feed, clock: services.clock, limiter: limiter,
                   maxBodyBytes: maxBody).addRoutes(to: v1)
    EventStreamController(feed: services.feed, auth: services.auth, notifier: services.notifier,
                          heartbeat: .seconds(services.config.eventStreamHeartbeatSeconds),
                          maxDuration: .seconds(services.config.eventStreamMaxSeconds)).addRoutes(to: v1)
    RegionController(regions: regions).addRoutes(to: v1)
    WebhookController(webhooks: services.webhooks, maxBodyBytes: maxBody).addRoutes(to: v1)
    MeetingController(meetings: services.domain.meetings, maxBodyBytes: maxBody).addRoutes(to: v1)
    GroupController(groups: services.domain.groups, maxBodyBytes: maxBody).addRoutes(to: v1)
    TourController(tours: services.domain.tours, maxBodyBytes: maxBody).addRoutes(to: v1)
    PromotionController(promotions: services.domain.promotions, maxBodyBytes: maxBody).addRoutes(to: v1)
    RegistryController(registry: services.registry, sightings: services.sightings, maxBodyBytes: maxBody).addRoutes(to: v1)
    let phones = PhoneController(
        phones: PhoneService(fences: services.fences, regions: regions, sightings: services.sightings, groups: services.domain.groups,
                             devices: services.store, feed: services.feed, clock: services.clock),
        auth: services.auth, limiter: limiter, clock: services.clock, maxBodyBytes: maxBody)
    phones.addRoutes(to: v1)
    phones.addUnauthenticatedRoutes(to: router)
    methods.load(router.routes.map { (path: $0.path.description, method: $0.method.rawValue) })
    return router
}

/// One debug-level log line per request, with method, path, status and duration.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        if context.logger.logLevel <= .debug {
            let ms = (ContinuousClock.now - start).components.attoseconds / 1_000_000_000_000_000
            context.logger.debug("request", metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(response.status.code)", "ms": "\(ms)",
            ])
        }
        return response
    }
}
