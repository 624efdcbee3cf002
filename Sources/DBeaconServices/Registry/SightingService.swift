package import DBeaconCore
import DBeaconGeo
package import DBeaconStore

/// Sighting batches: each item resolved through the registry, ranged (log-distance path loss)
/// and classified; resolved sightings put the user inside their digital beacons (through the
/// fence engine's presence path); three or more positioned entries give an indoor position
/// (weighted least squares) that is fed to the fence engine as a location fix unless it is a
/// physically impossible jump. One bad item yields a per-item error, never a failed batch.
/// (Answering a `batch_id` once is the API's concern; the fence engine ignores what it already
/// knows, so a batch processed twice refreshes presence without new events.)
package struct SightingService: Sendable {
    package let registry: RegistryService
    let store: any RegistryStore
    package let fences: FenceEngine
    package let clock: any WallClock
    package let config: SightingConfig

    package init(registry: RegistryService, store: any RegistryStore, fences: FenceEngine, clock: any WallClock,
                 config: SightingConfig = SightingConfig()) {
        self.registry = registry
        self.store = store
        self.fences = fences
        self.clock = clock
        self.config = config
    }

    /// Processes a batch for `user`: `items` as decoded (an item that could not be decoded
    /// keeps its error and its place).
    package func process(_ items: [Result<SightingInput, BeaconFrameError>], user: UserID) async throws -> SightingOutcome {
        guard !items.isEmpty else { throw DBeaconError.invalid("sightings", "sightings must not be empty", code: "empty_value") }
        guard items.count <= config.maxSightingsPerBatch else {
            throw DBeaconError.invalid("sightings", "at most \(config.maxSightingsPerBatch) sightings per batch", code: "too_many")
        }
        let now = clock.now()
        let window = fences.config
        let decoded = items.map { item in
            item.flatMap { s -> Result<SightingInput, BeaconFrameError> in
                var s = s
                let at = s.timestamp ?? now
                if let problem = window.timeProblem(at, now: now) { return .failure(BeaconFrameError(problem.code, problem.message)) }
                s.timestamp = at
                return .success(s)
            }
        }
        let identities = decoded.compactMap { try? $0.get().identity }
        let resolved = try await registry.resolve(identities, by: .user(user), at: now)

        // Per item: resolution, range, proximity.
        var results: [SightingResult] = []
        var presence: [PresenceSighting] = []
        var ranged: [(entry: RegistryEntry, distance: Double, at: Timestamp)] = []
        for (i, item) in decoded.enumerated() {
            switch item {
            case .failure(let error):
                results.append(SightingResult(index: i, error: error))
            case .success(let s):
                let at = s.timestamp ?? now
                let hit = resolved[s.identity]
                let power = s.txPower ?? hit?.entry.measuredPower ?? s.frameMeasuredPower ?? config.defaultMeasuredPower
                let distance = config.pathLoss.distance(rssi: s.rssi, measuredPower: power)
                var result = SightingResult(index: i, identity: s.identity, resolution: hit,
                                            distanceM: distance.map { ($0 * 100).rounded() / 100 },
                                            proximity: config.pathLoss.proximity(distanceM: distance))
                if let hit {
                    presence.append(PresenceSighting(beacon: hit.beacon.beacon, at: at, installedAt: hit.entry.position?.position,
                                                     distanceM: distance, registryEntry: hit.entry.id))
                    if let distance, hit.entry.position != nil { ranged.append((hit.entry, distance, at)) }
                } else {
                    result.error = BeaconFrameError("unknown_beacon", "no active registry entry that you may see matches this beacon")
                }
                results.append(result)
            }
        }

        var events = try await fences.reportPresence(user: user, sightings: presence)
        var position: PositionReport?
        if let estimate = estimatePosition(ranged) {
            let (report, fixEvents) = try await apply(estimate, user: user)
            position = report
            events += fixEvents
        }
        return SightingOutcome(results: results, position: position, events: events)
    }

    // MARK: Indoor position

    /// Trilateration over the positioned entries seen within the window before the newest
    /// such sighting; per entry, the median of its ranges.
    func estimatePosition(_ ranged: [(entry: RegistryEntry, distance: Double, at: Timestamp)]) -> (PositionEstimate, Timestamp)? {
        guard let newest = ranged.map(\.at).max() else { return nil }
        var byEntry: [RegistryID: (entry: RegistryEntry, distances: [Double])] = [:]
        for r in ranged where newest.seconds(since: r.at) <= config.positionWindowSeconds {
            byEntry[r.entry.id, default: (r.entry, [])].distances.append(r.distance)
        }
        guard byEntry.count >= 3 else { return nil }
        let ranges = byEntry.values.sorted { $0.entry.id < $1.entry.id }.compactMap { e -> RangeMeasurement? in
            guard let p = e.entry.position else { return nil }
            let sorted = e.distances.sorted()
            let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
            return RangeMeasurement(anchor: p.position, level: p.level, distanceM: median)
        }
        let solver = Trilateration(relativeRangeError: config.pathLoss.relativeRangeError(sigmaDB: config.rssiNoiseDB))
        return solver.estimate(ranges).map { ($0, newest) }
    }

    /// Feeds the estimate to the fence engine as a location fix, unless it would mean moving
    /// faster than `maxSpeedMps` since the last fix (beyond both accuracies): then it is
    /// flagged `implausible` and changes nothing.
    private func apply(_ e: (estimate: PositionEstimate, at: Timestamp), user: UserID) async throws -> (PositionReport, [Event]) {
        if let last = await fences.location(of: user) {
            let distance = Geodesy.distance(last.position, e.estimate.position)
            let excess = distance - last.accuracyM - e.estimate.accuracyM
            let seconds = max(e.at.seconds(since: last.fixAt), 1)
            if excess > 0, excess / seconds > config.maxSpeedMps {
                let reason = "\(Int(distance.rounded())) m from the last fix in \(Int(seconds.rounded())) s "
                    + "is faster than \(config.maxSpeedMps) m/s"
                return (PositionReport(estimate: e.estimate, at: e.at, implausibleReason: reason, applied: false), [])
            }
        }
        let report = try await fences.report(user: user, fixes: [
            LocationFix(position: e.estimate.position, accuracyM: e.estimate.accuracyM, timestamp: e.at),
        ])
        return (PositionReport(estimate: e.estimate, at: e.at, implausibleReason: nil, applied: report.accepted > 0), report.events)
    }
}

// MARK: Answers kept per batch_id

extension SightingService {
    /// The answer stored for `user`'s `batchID`, as written (`SightingAnswer`), if any.
    package func storedAnswer(user: UserID, batchID: String) async throws -> String? {
        try await store.sightingBatchResponse(user: user, batchID: batchID)
    }

    /// Stores `answer` for `batchID` unless one is there already (a concurrent replay won):
    /// returns the one kept. Answers older than the retention period go at the same time.
    package func keepAnswer(_ answer: String, user: UserID, batchID: String) async throws -> String {
        let now = clock.now()
        return try await store.storeSightingBatchResponse(user: user, batchID: batchID, response: answer, at: now,
                                                          expireBefore: now.adding(seconds: -config.batchRetentionSeconds))
    }

    /// The beacons among `ids` as `user` may see them now (the visibility gate).
    package func visibleBeacons(_ ids: [BeaconID], to user: UserID) async throws -> [VisibleBeacon] {
        try await registry.beaconService.gate.beacons(ids, for: .user(user), from: .record)
    }
}
