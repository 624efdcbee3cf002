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
    /// The account lifecycle: token rotation, the admin's user management, export, erasure.
    package let accounts: AccountService
    package let beacons: BeaconService
    package let fences: FenceEngine
    package let webhooks: WebhookService
    package let deliverer: WebhookDeliverer
    /// The event log as each caller may read it now.
    package let feed: EventFeed
    /// Wakes this process's event streams when events for their readers are committed.
    package let notifier: EventNotifier
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
    /// The in-memory index's snapshot folder, if snapshots are kept.
    package let indexSnapshots: IndexSnapshots?
    /// Where beacons changed lately (phones keep their regions while nothing near them did).
    package let regionChanges: RegionChanges
    /// Phones' states as this process last read or wrote them (forgotten at an erasure here).
    package let phoneStates: PhoneStateCache
    let logger: Logger

    /// The background services to run with the HTTP server.
    package var backgroundServices: [any Service] {
        guard config.runBackgroundServices else { return [] }
        var services: [any Service] = [deliverer, ticker, relay, poller]
        if let snapshots = indexSnapshots, snapshots.writable, let memory = engine as? MemoryCoverageEngine {
            services.append(IndexSnapshotService(memory: memory, snapshots: snapshots, store: store,
                                                 interval: .milliseconds(Int64(config.indexSnapshots.intervalSeconds * 1000)),
                                                 logger: logger))
        }
        return services
    }

    /// Opens the database, configures the admin token and loads samples when asked.
    package static func make(_ config: AppConfig, clock: any WallClock = SystemClock(), logger: Logger) async throws -> AppServices {
        let store = try await StoreLocation.open(config.databasePath, synchronousFull: config.synchronousFull,
                                                 listen: config.followRemoteChanges,
                                                 deadline: DatabaseDeadline(seconds: config.databaseTimeoutSeconds),
                                                 logger: logger)
        let auth = AuthService(store: store, clock: clock)
        let generated = try await auth.configureAdmin(token: config.adminToken)
        let (changes, continuation) = AsyncStream.makeStream(of: BeaconChange.self)
        // Other processes' writes: on PostGIS the node that wrote runs enter/exit for standing
        // users, so they only update this index; the CLI writing to a SpatiaLite file keeps no
        // fence state, so the server evaluates its changes as its own.
        let relayRemote = store.remoteChangesNeedFenceEvaluation
        let engine: any CoverageEngine
        var snapshots: IndexSnapshots?
        let regionChanges = RegionChanges()
        let phoneStates = PhoneStateCache()
        // A device revoked, a user disabled or erased (here, or by another process: whose is not said).
        store.observeAccountChanges { user in
            if let user { phoneStates.forget(user) } else { phoneStates.forgetAll() }
        }
        switch config.engine {
        case .sql:
            engine = SQLCoverageEngine(store: store)
            store.observeChanges { change in
                regionChanges.record(change)
                continuation.yield(change)
            }
            store.observeRemoteChanges { change in
                regionChanges.record(change)
                if relayRemote { continuation.yield(change) }
            }
        case .memory:
            // Observe before loading, so a change committed during the load is not lost.
            let memory = MemoryCoverageEngine(store: store)
            memory.hintedPerimeterText = config.indexSnapshots.hintedPerimeterText
            // Weakly: the engine holds the store (it loads from it), and the store keeps its observers.
            store.observeChanges { [weak memory] change in
                memory?.apply(change)
                regionChanges.record(change)
                continuation.yield(change)
            }
            store.observeRemoteChanges { [weak memory] change in
                memory?.apply(change)
                regionChanges.record(change)
                if relayRemote { continuation.yield(change) }
            }
            // After a lost listener connection, reload: notifications sent meanwhile are gone.
            let resyncLogger = logger
            // The store keeps its observers: they hold the engine weakly, else neither is ever freed.
            store.observeResyncNeeded { [weak memory] in
                guard let memory else { return }
                do { try await DatabaseDeadline.$bulk.withValue(.bulkWork) { try await memory.resync() } } catch {
                    resyncLogger.error("index resync failed", metadata: ["error": "\(error)"])
                    throw error  // the feed reconnects and tries again
                }
            }
            let snapshotFolder = config.indexSnapshots.folder(for: config.databasePath)
            snapshots = snapshotFolder.map { IndexSnapshots(directory: $0, write: config.indexSnapshots.mode == .readWrite) }
            let fromSnapshot = try await DatabaseDeadline.$bulk.withValue(.bulkWork) {
                try await Self.loadIndex(memory, store: store, snapshots: snapshots, logger: logger)
            }
            // Large polygons' strips and rasters are built, and their GeoJSON written to the
            // coordinate file, after the server is up; until then each is answered by its compact
            // edge test alone, over all its edges, and formatted in each answer (same answers).
            // Then, after a load from the database, a snapshot for the next start.
            let warmLogger = logger
            Task.detached(priority: .utility) { [snapshots] in
                let started = ContinuousClock.now
                let prepared = await memory.warm()
                await offEventLoops { releaseFreedMemory() }
                warmLogger.info("in-memory index prepared", metadata: [
                    "polygons": "\(prepared)", "seconds": Self.rounded(Self.seconds(since: started)),
                ])
                if let snapshots, snapshots.writable, !fromSnapshot || prepared > 0 {
                    await Self.writeSnapshot(memory, to: snapshots, logger: warmLogger, force: true)
                }
            }
            engine = memory
        }
        var beacons = BeaconService(store: store, engine: engine, clock: clock, limits: config.limits,
                                    valueEncoding: FeatureValueEncoding())
        beacons.maxBeaconsPerUser = config.maxBeaconsPerUser
        beacons.minCoVisitors = config.alsoVisitedMinVisitors
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
        // After an erasure that deleted beacons, a snapshot of the index without them, on a new
        // coordinate file (the old one, append-only, still held their perimeters).
        let compaction: (@Sendable (UserID, ErasureReport) async -> Void)? = { [snapshots] user, _ in
            phoneStates.forget(user)
            guard let memory = engine as? MemoryCoverageEngine else { return }
            memory.scrub(erasing: user)
            guard let snapshots, snapshots.writable else { return }
            await Self.writeSnapshot(memory, to: snapshots, logger: logger, force: true, compactCoordinates: true)
        }
        let accounts = AccountService(store: store, auth: auth, beacons: beacons, fences: fences, feed: feed, clock: clock,
                                      afterErasure: compaction)
        let services = AppServices(
            config: config, store: store, engine: engine, clock: clock, auth: auth, accounts: accounts, beacons: beacons, fences: fences,
            webhooks: WebhookService(store: store, ssrf: ssrf, clock: clock, wake: wake),
            deliverer: WebhookDeliverer(feed: feed, ssrf: ssrf, clock: clock, schedule: config.webhookRetrySchedule,
                                        wake: wake, logger: logger),
            feed: feed, notifier: EventNotifier(store: store, commits: store, logger: logger), ticker: ticker, relay: BeaconChangeRelay(changes: changes, fences: fences, logger: logger),
            poller: RemoteChangePoller(store: store, logger: logger),
            domain: await DomainServices.make(beacons: beacons, store: store, fences: fences, config: config.services, logger: logger),
            registry: registry,
            sightings: SightingService(registry: registry, store: store, fences: fences, clock: clock, config: config.sightings),
            generatedAdminToken: generated, indexSnapshots: snapshots, regionChanges: regionChanges, phoneStates: phoneStates, logger: logger)
        if let dir = config.samplesDirectory {
            try await SampleLoader(services: services).loadIfEmpty(directory: dir, logger: logger)
        }
        return services
    }

    // MARK: The in-memory index and its snapshot

    /// Loads the in-memory index: from its snapshot when that is current (same store, no change
    /// since), else from the database (then, in a folder this process owns, with a new
    /// coordinate file the next snapshot refers to). Returns whether the snapshot was used.
    static func loadIndex(_ memory: MemoryCoverageEngine, store: any AppStore, snapshots: IndexSnapshots?,
                          logger: Logger) async throws -> Bool {
        if let snapshots, let stamp = try await store.changeStamp() {
            do {
                if let report = try memory.load(snapshotFrom: snapshots, stamp: stamp) {
                    snapshots.current = stamp
                    logger.info("in-memory index loaded from its snapshot", metadata: [
                        "beacons": "\(report.beacons)", "seconds": rounded(report.seconds), "folder": "\(snapshots.directory)",
                    ])
                    return true
                }
                logger.info("no current index snapshot: loading from the database", metadata: ["folder": "\(snapshots.directory)"])
            } catch {
                logger.warning("index snapshot unreadable: loading from the database", metadata: ["error": "\(error)"])
                memory.reset()
            }
            if snapshots.writable {
                do { memory.useCoordinates(try snapshots.newCoordinateFile()) } catch {
                    logger.warning("no coordinate file in the snapshot folder: no snapshots this run", metadata: ["error": "\(error)"])
                }
            }
        }
        let load = try await withAllocatorSetForBulkLoading { try await memory.load(prepare: false) }
        // The rows' and perimeters' temporaries go back to the system before the server answers.
        let trimStarted = ContinuousClock.now
        releaseFreedMemory()
        logger.info("in-memory index loaded", metadata: [
            "beacons": "\(load.beacons)", "seconds": rounded(load.seconds), "install_s": rounded(load.installSeconds),
            "trim_s": rounded(seconds(since: trimStarted)),
        ])
        return false
    }

    /// Writes the index's snapshot unless the one in the folder is current, logging the outcome
    /// (failures are logged, not thrown: the next start loads from the database).
    static func writeSnapshot(_ memory: MemoryCoverageEngine, to snapshots: IndexSnapshots, logger: Logger,
                              force: Bool = false, compactCoordinates: Bool? = nil) async {
        do {
            if !force, let current = snapshots.current, try await memory.store.changeStamp() == current { return }
            // A snapshot is a cache: never written into the space the database's writes need.
            let estimate = snapshots.sizeOfCurrent
            guard DiskSpace.allows(estimate + estimate / 4, at: snapshots.directory) else {
                logger.warning("index snapshot skipped: too little free disk space", metadata: ["needs_bytes": "\(estimate)"])
                return
            }
            guard let report = try await memory.writeSnapshot(to: snapshots, compactCoordinates: compactCoordinates) else { return }
            logger.info("index snapshot written", metadata: [
                "beacons": "\(report.beacons)", "bytes": "\(report.bytes)", "seconds": rounded(report.seconds),
                "capture_s": rounded(report.captureSeconds),
                "counter": "\(report.stamp.counter)",
            ])
        } catch {
            logger.error("index snapshot failed", metadata: ["error": "\(error)"])
        }
    }

    /// Writes the index's snapshot now (at shutdown, once nothing else writes), if this process
    /// keeps one.
    package func writeIndexSnapshot() async {
        guard let snapshots = indexSnapshots, snapshots.writable, let memory = engine as? MemoryCoverageEngine else { return }
        await Self.writeSnapshot(memory, to: snapshots, logger: logger)
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        (ContinuousClock.now - start).inSeconds
    }

    static func rounded(_ x: Double) -> Logger.MetadataValue { "\((x * 10).rounded() / 10)" }
}

/// Writes the index's snapshot every `interval` when beacons changed since the last one (so a
/// crash costs at most that much of a restart's work: a stale snapshot is rebuilt anyway).
package struct IndexSnapshotService: Service {
    let memory: MemoryCoverageEngine
    let snapshots: IndexSnapshots
    let store: any AppStore
    let interval: Duration
    let logger: Logger

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { return }
                await AppServices.writeSnapshot(memory, to: snapshots, logger: logger)
            }
        }
    }
}

