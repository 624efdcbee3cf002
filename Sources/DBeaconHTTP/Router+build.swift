import DBeaconCore
import DBeaconServices
package import Hummingbird
import HummingbirdCore
package import Logging
package import ServiceLifecycle

/// The HTTP server on the services: the routes, the connection guards, the requests answered
/// from the channel pipeline (`PipelineResponder`), the event streams'
/// notifier, and `background` (the deliverer, the tickers) run beside it. `DBeaconApp` makes the services; tests build the same
/// server on services of their own.
package func buildApplication(_ services: RouterServices, background: [any Service], logger: Logger) -> some ApplicationProtocol {
    let metrics = AppMetrics()
    let router = buildRouter(services, metrics: metrics)
    let settings = services.settings
    let limits = settings.connections
    let counter = ClientConnectionCounter(maxPerClient: limits.maxConnectionsPerClient) { metrics.connectionRefused() }
    let maxConnections = min(limits.maxConnections, DescriptorLimit.raiseForConnections())
    let serverName = "dbeacon"
    // One responder for both ways a request is answered (the pipeline's and Hummingbird's loop).
    let responder = router.buildResponder()
    let pipeline = PipelineResponderSettings(responder: responder, logger: logger, serverName: serverName)
    return Application(
        responder: responder,
        server: .http1(configuration: HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionGuard(limits: limits, counter: counter), PipelineResponder(settings: pipeline)])),
        configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: serverName,
                             availableConnectionsDelegate: MaximumAvailableConnections(maxConnections, logger: logger)),
        services: [services.notifier] + background,
        logger: logger
    )
}

/// All routes: operations and the map console at the root, the API under `/v1` behind bearer
/// authentication.
package func buildRouter(_ services: RouterServices, metrics: AppMetrics = AppMetrics()) -> Router<AppRequestContext> {
    let settings = services.settings
    // Every GET route answers HEAD too (RFC 9110 §9.3.2): the GET handler's status and headers, no body.
    let router = Router(context: AppRequestContext.self, options: .autoGenerateHeadEndpoints)
    let limiter = RateLimiter(settings.rateLimits, refused: { metrics.rateLimited($0) })
    let methods = RouteMethods()
    router.add(middleware: ErrorMiddleware(methods: methods))
    router.add(middleware: MetricsMiddleware(metrics: metrics))
    router.add(middleware: RequestLogMiddleware())
    // PostgreSQL is reached over the network and can stop answering; the embedded store cannot
    // (its waits are SQLite's busy timeout), and its hot paths keep the two tasks per request.
    if settings.remoteDatabase {
        router.add(middleware: RequestDeadlineMiddleware(seconds: settings.databaseTimeoutSeconds + 1))
    }
    OperationsController(health: services.health, metrics: metrics, auth: services.auth, metricsToken: settings.metricsToken,
                         readinessSeconds: min(settings.readinessTimeoutSeconds, settings.databaseTimeoutSeconds)).addRoutes(to: router)
    ConsoleController(config: settings.console, logger: Logger(label: "dbeacon.console")).addRoutes(to: router)

    let v1 = router.group("v1")
        .add(middleware: AuthMiddleware(auth: services.auth, limiter: limiter))
        .group(context: AuthenticatedContext.self)
        .add(middleware: RateLimitMiddleware(limiter: limiter))
    let maxBody = settings.maxBodyBytes
    UserController(auth: services.auth, accounts: services.accounts, maxBodyBytes: maxBody).addRoutes(to: v1)
    TagController(beacons: services.beacons, maxBodyBytes: maxBody).addRoutes(to: v1)
    BeaconController(beacons: services.beacons, maxBodyBytes: maxBody, maxImportBytes: settings.maxImportBytes).addRoutes(to: v1)
    let regions = services.regions
    LiveController(fences: services.fences, regions: regions, feed: services.feed, clock: services.clock, limiter: limiter,
                   maxBodyBytes: maxBody).addRoutes(to: v1)
    EventStreamController(feed: services.feed, auth: services.auth, notifier: services.notifier,
                          heartbeat: .seconds(settings.eventStreamHeartbeatSeconds),
                          maxDuration: .seconds(settings.eventStreamMaxSeconds)).addRoutes(to: v1)
    RegionController(regions: regions).addRoutes(to: v1)
    WebhookController(webhooks: services.webhooks, maxBodyBytes: maxBody).addRoutes(to: v1)
    MeetingController(meetings: services.meetings, maxBodyBytes: maxBody).addRoutes(to: v1)
    GroupController(groups: services.groups, maxBodyBytes: maxBody).addRoutes(to: v1)
    TourController(tours: services.tours, maxBodyBytes: maxBody).addRoutes(to: v1)
    PromotionController(promotions: services.promotions, maxBodyBytes: maxBody).addRoutes(to: v1)
    RegistryController(registry: services.registry, sightings: services.sightings, maxBodyBytes: maxBody).addRoutes(to: v1)
    let phones = PhoneController(phones: services.phones, auth: services.auth, limiter: limiter, clock: services.clock,
                                 maxBodyBytes: maxBody)
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
