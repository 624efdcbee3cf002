package import DBeaconServices

/// Everything the routes need: the services (never a store or an index: reads for answers go
/// through the services and their visibility gate) and the server's settings. Made by the
/// composition root (`DBeaconApp`), or by a test.
package struct RouterServices: Sendable {
    package var settings: HTTPSettings
    package var clock: any WallClock
    package var auth: AuthService
    package var accounts: AccountService
    package var beacons: BeaconService
    package var fences: FenceEngine
    package var feed: EventFeed
    package var notifier: EventNotifier
    package var webhooks: WebhookService
    package var meetings: MeetingService
    package var groups: GroupService
    package var tours: TourService
    package var promotions: PromotionService
    package var registry: RegistryService
    package var sightings: SightingService
    package var regions: RegionService
    package var phones: PhoneService
    /// What `/readyz` and `/metrics` read of this node.
    package var health: NodeHealth

    package init(settings: HTTPSettings, clock: any WallClock, auth: AuthService, accounts: AccountService, beacons: BeaconService,
                 fences: FenceEngine, feed: EventFeed, notifier: EventNotifier, webhooks: WebhookService, meetings: MeetingService,
                 groups: GroupService, tours: TourService, promotions: PromotionService, registry: RegistryService,
                 sightings: SightingService, regions: RegionService, phones: PhoneService, health: NodeHealth) {
        self.settings = settings
        self.clock = clock
        self.auth = auth
        self.accounts = accounts
        self.beacons = beacons
        self.fences = fences
        self.feed = feed
        self.notifier = notifier
        self.webhooks = webhooks
        self.meetings = meetings
        self.groups = groups
        self.tours = tours
        self.promotions = promotions
        self.registry = registry
        self.sightings = sightings
        self.regions = regions
        self.phones = phones
        self.health = health
    }
}

/// How the server listens and answers (from `dbeacon serve`'s options).
package struct HTTPSettings: Sendable {
    /// The address to listen on (loopback unless told otherwise).
    package var host = "127.0.0.1"
    package var port = 8080
    /// Bodies of JSON requests other than imports may be this large (1 MiB by default); beyond, 413
    /// `body_too_large`.
    package var maxBodyBytes = 1 << 20
    /// Bodies of `POST /v1/beacons/import` (a FeatureCollection in one transaction).
    package var maxImportBytes = 64 << 20
    /// A token that may read `/metrics` besides the admin token.
    package var metricsToken: String?
    /// How long a request waits for the database before it is answered 503.
    package var databaseTimeoutSeconds = 5.0
    /// How long `/readyz` waits for the database.
    package var readinessTimeoutSeconds = 2.0
    /// Whether the database is reached over the network (PostgreSQL): each request then gets a
    /// deadline of its own besides the database's.
    package var remoteDatabase = false
    /// Seconds of silence after which an event stream writes a comment line, so proxies do not
    /// close it.
    package var eventStreamHeartbeatSeconds = 15.0
    /// Seconds after which the server ends an event stream; `EventSource` reconnects and resumes
    /// with `Last-Event-ID`.
    package var eventStreamMaxSeconds = 60.0
    package var connections = ConnectionLimits()
    package var rateLimits = RateLimits()
    package var console = ConsoleConfig()

    package init() {}
}
