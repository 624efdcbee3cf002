package import DBeaconCore
package import DBeaconGeo
package import DBeaconStore
import Crypto

/// Sighting batches: each item resolved through the registry, ranged (log-distance path loss)
/// and classified; resolved sightings put the user inside their digital beacons (through the
/// fence engine's presence path); three or more positioned entries give an indoor position
/// (weighted least squares) that is fed to the fence engine as a location fix unless it is a
/// physically impossible jump. One bad item yields a per-item error, never a failed batch.
///
/// A batch with a `batch_id` is answered once: the answer is stored per (user, batch_id) and a
/// replay returns it without repeating its effects. (The answer is stored after the effects
/// are durable; should the process die in between, the replay recomputes, and the fence engine
/// ignores what it already knows: presence is refreshed without new events, and fixes not
/// newer than the last one are ignored.)
package struct SightingService: Sendable {
    package let registry: RegistryService
    package let store: any RegistryStore
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

    /// Processes `POST /v1/sightings` for `user` and returns the JSON answer.
    package func process(_ body: JSONValue, user: UserID) async throws -> JSONValue {
        let o = try ObjectReader(body)
        let batchID = try o.optionalString("batch_id", maxLength: 100, allowEmpty: false)
        guard let items = try o.optionalArray("sightings", maxCount: config.maxSightingsPerBatch) else {
            throw DBeaconError.invalid("sightings", "sightings is required", code: "missing_field")
        }
        guard !items.isEmpty else { throw DBeaconError.invalid("sightings", "sightings must not be empty", code: "empty_value") }
        let fingerprint = Self.fingerprint(items)
        if let batchID, let stored = try await store.sightingBatchResponse(user: user, batchID: batchID) {
            return try Self.replay(stored, fingerprint: fingerprint)
        }

        let now = clock.now()
        let maxSkew = fences.config.maxFutureSkewSeconds
        let decoded: [Result<SightingInput, BeaconFrameError>] = items.enumerated().map { i, item in
            Self.decode(item, path: "sightings[\(i)]", now: now, maxFutureSkew: maxSkew)
        }
        let identities = decoded.compactMap { try? $0.get().identity }
        let resolved = try await registry.resolve(identities, by: .user(user), at: now)

        // Per item: resolution, range, proximity.
        var results: [JSONValue] = []
        var presence: [PresenceSighting] = []
        var ranged: [(entry: RegistryEntry, distance: Double, at: Timestamp)] = []
        for (i, item) in decoded.enumerated() {
            var result = JSONObject([("index", .int(i))])
            switch item {
            case .failure(let error):
                result["beacon"] = .null
                result["distance_m"] = .null
                result["proximity"] = .null
                result["error"] = .object(["code": .string(error.code), "message": .string(error.message)])
            case .success(let s):
                let hit = resolved[s.identity]
                let power = s.txPower ?? hit?.entry.measuredPower ?? s.frameMeasuredPower ?? config.defaultMeasuredPower
                let distance = config.pathLoss.distance(rssi: s.rssi, measuredPower: power)
                result["beacon"] = hit.map { BeaconFeatureCodec.encode($0.beacon) } ?? .null
                result["distance_m"] = .optional(distance.map { ($0 * 100).rounded() / 100 })
                result["proximity"] = .string(config.pathLoss.proximity(distanceM: distance).rawValue)
                if let hit {
                    result["error"] = .null
                    result["registry_entry"] = .string(hit.entry.id.rawValue)
                    presence.append(PresenceSighting(beacon: hit.beacon, at: s.timestamp, installedAt: hit.entry.position?.position,
                                                     distanceM: distance, registryEntry: hit.entry.id))
                    if let distance, hit.entry.position != nil { ranged.append((hit.entry, distance, s.timestamp)) }
                } else {
                    result["error"] = .object([
                        "code": "unknown_beacon",
                        "message": "no active registry entry that you may see matches this beacon",
                    ])
                }
                result["identity"] = .object(RegistryCodec.encodeIdentity(s.identity))
            }
            results.append(.object(result))
        }

        var events = try await fences.reportPresence(user: user, sightings: presence)
        var position: JSONValue = .null
        if let estimate = estimatePosition(ranged) {
            let (json, fixEvents) = try await apply(estimate, user: user)
            position = json
            events += fixEvents
        }
        let response = JSONValue.object(JSONObject([
            ("results", .array(results)), ("position", position), ("events", .array(events.map(\.json))),
        ]))
        guard let batchID else { return response }
        var stored = response.objectValue ?? JSONObject()
        stored["batch_id"] = .string(batchID)
        let record = JSONValue.object(JSONObject([("fingerprint", .string(fingerprint)), ("response", .object(stored))]))
        let kept = try await store.storeSightingBatchResponse(user: user, batchID: batchID, response: record.jsonString, at: now,
                                                             expireBefore: now.adding(seconds: -config.batchRetentionSeconds))
        return try Self.replay(kept, fingerprint: fingerprint)
    }

    /// The stored answer; a different batch under a used `batch_id` is a conflict.
    private static func replay(_ stored: String, fingerprint: String) throws -> JSONValue {
        let record = try JSONParser.parse(stored)
        guard record["fingerprint"]?.stringValue == fingerprint else {
            throw DBeaconError.conflict("batch_id was already used for a different batch of sightings", code: "batch_id_reused",
                                        path: "batch_id")
        }
        return record["response"] ?? .null
    }

    /// SHA-256 of the sightings as parsed, to recognise the same batch sent again.
    private static func fingerprint(_ items: [JSONValue]) -> String {
        SHA256.hash(data: JSONWriter.serialize(.array(items))).map { String($0, radix: 16).leftPadded(2) }.joined()
    }

    // MARK: Decoding items

    /// One item: `{"uuid","major","minor","rssi","tx_power"?,"timestamp"}` (or the decoded
    /// Eddystone / AltBeacon members with `type`), or `{"adv":"<hex>","rssi","timestamp"}`.
    package static func decode(_ item: JSONValue, path: String, now: Timestamp,
                               maxFutureSkew: Double) -> Result<SightingInput, BeaconFrameError> {
        do throws(DBeaconError) {
            let o = try ObjectReader(item, path: path)
            let identity: PhysicalBeaconIdentity
            var frameMeasuredPower: Int?
            if o.value("adv") != nil {
                if o.value("uuid") != nil || o.value("namespace") != nil || o.value("id1") != nil {
                    return .failure(BeaconFrameError("invalid_sighting", "give either adv or the decoded identity, not both"))
                }
                guard case .string(let hex)? = o.value("adv") else {
                    return .failure(BeaconFrameError("invalid_hex", "adv must be a string of hex digits"))
                }
                switch BeaconFrameParser.parse(hex: hex) {
                case .failure(let e): return .failure(e)
                case .success(let frame):
                    identity = frame.identity
                    frameMeasuredPower = frame.measuredPowerAt1m
                }
            } else {
                if o.value("uuid") == nil && o.value("namespace") == nil && o.value("id1") == nil {
                    return .failure(BeaconFrameError("missing_field", "a sighting needs uuid, major and minor, or adv"))
                }
                identity = try RegistryCodec.decodeIdentity(o, concrete: true)
            }
            guard case .number(let r)? = o.value("rssi"), r == r.rounded(), (-127...0).contains(r) else {
                return .failure(BeaconFrameError(o.value("rssi") == nil ? "missing_field" : "invalid_rssi",
                                                 "rssi is required: an integer within -127…0 dBm"))
            }
            var txPower: Int?
            if let v = o.value("tx_power") {
                guard case .number(let t) = v, t == t.rounded(), RegistryCodec.measuredPowerRange.contains(Int(exactly: t) ?? 1000) else {
                    return .failure(BeaconFrameError("invalid_tx_power", "tx_power must be an integer within -127…20 dBm"))
                }
                txPower = Int(t)
            }
            let timestamp = try o.optionalTimestamp("timestamp") ?? now
            if timestamp.seconds(since: now) > maxFutureSkew {
                return .failure(BeaconFrameError("future_timestamp", "timestamp is more than \(Int(maxFutureSkew)) s in the future"))
            }
            return .success(SightingInput(identity: identity, rssi: Int(r), txPower: txPower, frameMeasuredPower: frameMeasuredPower,
                                          timestamp: timestamp))
        } catch {
            let message = error.path.map { "\($0): \(error.message)" } ?? error.message
            return .failure(BeaconFrameError(error.code == "invalid_type" && error.path == path ? "invalid_sighting" : error.code, message))
        }
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
    private func apply(_ e: (estimate: PositionEstimate, at: Timestamp), user: UserID) async throws -> (JSONValue, [Event]) {
        var o = JSONObject([
            ("lat", .number(e.estimate.position.lat)), ("lon", .number(e.estimate.position.lon)), ("level", .int(e.estimate.level)),
            ("accuracy_m", .number((e.estimate.accuracyM * 100).rounded() / 100)), ("method", .string(e.estimate.method.rawValue)),
            ("anchors", .int(e.estimate.anchors)), ("timestamp", .string(e.at.rfc3339)),
        ])
        if let last = await fences.location(of: user) {
            let distance = Geodesy.distance(last.position, e.estimate.position)
            let excess = distance - last.accuracyM - e.estimate.accuracyM
            let seconds = max(e.at.seconds(since: last.fixAt), 1)
            if excess > 0, excess / seconds > config.maxSpeedMps {
                o["implausible"] = true
                o["reason"] = .string("\(Int(distance.rounded())) m from the last fix in \(Int(seconds.rounded())) s "
                    + "is faster than \(config.maxSpeedMps) m/s")
                o["applied"] = false
                return (.object(o), [])
            }
        }
        o["implausible"] = false
        let report = try await fences.report(user: user, fixes: [
            LocationFix(position: e.estimate.position, accuracyM: e.estimate.accuracyM, timestamp: e.at),
        ])
        o["applied"] = .bool(report.accepted > 0)
        return (.object(o), report.events)
    }
}
