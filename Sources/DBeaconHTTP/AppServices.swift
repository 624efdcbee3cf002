import DBeaconCore
import DBeaconAPI
import DBeaconGeo
package import DBeaconServices
package import DBeaconIndex
package import DBeaconStore
import Foundation
package import Logging
package import ServiceLifecycle

/// The wired-up domain: store, engines and services. Built once per process (or per test).
package struct AppServices: Sendable {
    package let config: AppConfig
    /// SpatiaLite file or PostGIS database, by `config.databasePath` (`postgres://…` for PostGIS).
    package let store: any AppStore
    /// The engine answering coverage queries (`config.engine`).
    package let engine: any CoverageEngine
    package let clock: any WallClock
    package let auth: AuthService
    package let beacons: BeaconService
    package let fences: FenceEngine
    package let webhooks: WebhookService
    package let deliverer: WebhookDeliverer
    /// The event log as each caller may read it now.
    package let feed: EventFeed
    package let ticker: LifetimeTicker
    package let relay: BeaconChangeRelay
    /// Picks up what other processes write to the same database (SpatiaLite).
    package let poller: RemoteChangePoller
    /// The four services (meetings, group tracking, city tours, advertising).
    package let domain: DomainServices
    /// The physical beacon registry and sighting resolution.
    package let registry: RegistryService
    package let sightings: SightingService
    /// A token generated on first start (to be shown once), if any.
    package let generatedAdminToken: String?

    /// The background services to run with the HTTP server.
    package var backgroundServices: [any Service] {
        config.runBackgroundServices ? [deliverer, ticker, relay, poller] : []
    }

    /// Opens the database, configures the admin token and loads samples when asked.
    package static func make(_ config: AppConfig, clock: any WallClock = SystemClock(), logger: Logger) async throws -> AppServices {
        let store = try await StoreLocation.open(config.databasePath, synchronousFull: config.synchronousFull,
                                                 listen: config.followRemoteChanges,
                                                 logger: logger)
        let auth = AuthService(store: store, clock: clock)
        let generated = try await auth.configureAdmin(token: config.adminToken)
        let (changes, continuation) = AsyncStream.makeStream(of: BeaconChange.self)
        // Other processes' writes: on PostGIS the node that wrote runs enter/exit for standing
        // users, so they only update this index; the CLI writing to a SpatiaLite file keeps no
        // fence state, so the server evaluates its changes as its own.
        let relayRemote = store.remoteChangesNeedFenceEvaluation
        let engine: any CoverageEngine
        switch config.engine {
        case .sql:
            engine = SQLCoverageEngine(store: store)
            store.observeChanges { continuation.yield($0) }
            store.observeRemoteChanges { if relayRemote { continuation.yield($0) } }
        case .memory:
            // Observe before loading, so a change committed during the load is not lost.
            let memory = MemoryCoverageEngine(store: store)
            // Weakly: the engine holds the store (answers read beacons from it), and the store
            // keeps its observers.
            store.observeChanges { [weak memory] change in
                memory?.apply(change)
                continuation.yield(change)
            }
            store.observeRemoteChanges { [weak memory] change in
                memory?.apply(change)
                if relayRemote { continuation.yield(change) }
            }
            // After a lost listener connection, reload: notifications sent meanwhile are gone.
            let resyncLogger = logger
            // The store keeps its observers: they hold the engine weakly, else neither is ever freed.
            store.observeResyncNeeded { [weak memory] in
                guard let memory else { return }
                Task {
                    do { try await memory.resync() } catch {
                        resyncLogger.error("index resync failed", metadata: ["error": "\(error)"])
                    }
                }
            }
            // Large polygons' rasters are built after the server is up; until each is, its
            // compact edge test answers alone (same answers).
            let load = try await memory.load(prepare: false)
            func s(_ x: Double) -> Logger.MetadataValue { "\((x * 10).rounded() / 10)" }
            logger.info("in-memory index loaded", metadata: [
                "beacons": "\(load.beacons)", "seconds": s(load.seconds), "install_s": s(load.installSeconds),
            ])
            let warmLogger = logger
            Task.detached(priority: .utility) {
                let started = ContinuousClock.now
                let prepared = await memory.warm()
                releaseFreedMemory()
                let d = (ContinuousClock.now - started).components
                warmLogger.info("in-memory index prepared", metadata: [
                    "polygons": "\(prepared)", "seconds": s(Double(d.seconds) + Double(d.attoseconds) / 1e18),
                ])
            }
            engine = memory
        }
        var beacons = BeaconService(store: store, engine: engine, clock: clock, limits: config.limits,
                                    valueEncoding: FeatureValueEncoding())
        beacons.maxBeaconsPerUser = config.maxBeaconsPerUser
        let fences = FenceEngine(store: store, engine: engine, committer: GroupCommitter(store: store), clock: clock,
                                 config: config.fences)
        try await fences.reload()
        store.observeRemoteFenceWrites { [weak fences] in
            guard let fences else { return }
            Task { await fences.invalidate() }
        }
        let wake = WakeSignal()
        let ssrf = SSRFGuard(allowPrivate: config.allowPrivateWebhooks)
        store.observeCommits { wake.signal() }
        var ticker = LifetimeTicker(store: store, fences: fences, clock: clock, logger: logger)
        ticker.retentionDays = config.eventRetentionDays
        ticker.meetingReminderSeconds = config.services.meetingReminderSeconds
        let registry = RegistryService(store: store, beacons: beacons)
        let feed = EventFeed(store: store, beacons: beacons)
        let services = AppServices(
            config: config, store: store, engine: engine, clock: clock, auth: auth, beacons: beacons, fences: fences,
            webhooks: WebhookService(store: store, ssrf: ssrf, clock: clock, wake: wake),
            deliverer: WebhookDeliverer(feed: feed, ssrf: ssrf, clock: clock, schedule: config.webhookRetrySchedule,
                                        wake: wake, logger: logger),
            feed: feed, ticker: ticker, relay: BeaconChangeRelay(changes: changes, fences: fences, logger: logger),
            poller: RemoteChangePoller(store: store, logger: logger),
            domain: await DomainServices.make(beacons: beacons, store: store, fences: fences, config: config.services, logger: logger),
            registry: registry,
            sightings: SightingService(registry: registry, store: store, fences: fences, clock: clock, config: config.sightings),
            generatedAdminToken: generated)
        if let dir = config.samplesDirectory {
            try await SampleLoader(services: services).loadIfEmpty(directory: dir, logger: logger)
        }
        return services
    }
}

