package import DBeaconCore
package import DBeaconServices

/// Answers `POST /v1/sightings`, once per `batch_id`: the answer is stored per (user, batch_id)
/// and a replay returns it without repeating its effects. (The answer is stored after the
/// effects are durable; should the process die in between, the replay recomputes, and the
/// fence engine ignores what it already knows: presence is refreshed without new events, and
/// fixes not newer than the last one are ignored.)
package enum SightingAnswer {
    /// Reads the batch (`SightingRequest`); without a `batch_id` it is processed and answered. With
    /// one, an answer stored for it is replayed (409 `batch_id_reused` for other items); otherwise
    /// the batch is processed, its answer stored, and the answer kept (a concurrent replay may have
    /// stored first) returned. A stored answer is rechecked for what the user may see now.
    package static func answer(_ body: JSONValue, user: UserID, service: SightingService) async throws -> JSONValue {
        let request = try SightingRequest(body, maxItems: service.config.maxSightingsPerBatch)
        if let batchID = request.batchID, let stored = try await service.storedAnswer(user: user, batchID: batchID) {
            return try await recheck(try replay(stored, fingerprint: request.fingerprint), user: user, service: service)
        }
        let response = encode(try await service.process(request.items, user: user))
        guard let batchID = request.batchID else { return response }
        var stored = response.objectValue ?? JSONObject()
        stored["batch_id"] = .string(batchID)
        let record = JSONValue.object(JSONObject([("fingerprint", .string(request.fingerprint)), ("response", .object(stored))]))
        let kept = try await service.keepAnswer(record.jsonString, user: user, batchID: batchID)
        return try await recheck(try replay(kept, fingerprint: request.fingerprint), user: user, service: service)
    }

    /// A stored answer as its user may see it now: each resolved beacon read again through the
    /// gate (its current state, or `null` with `unknown_beacon` once hidden from them), and the
    /// events about beacons they may no longer see left out. A replay never shows more than a
    /// new batch would.
    static func recheck(_ stored: JSONValue, user: UserID, service: SightingService) async throws -> JSONValue {
        guard var answer = stored.objectValue else { return stored }
        let results = answer["results"]?.arrayValue ?? []
        let events = answer["events"]?.arrayValue ?? []
        func beaconID(_ v: JSONValue?) -> BeaconID? { v?.stringValue.flatMap(BeaconID.init) }
        let named = results.compactMap { beaconID($0["beacon"]?["id"]) } + events.compactMap { beaconID($0["beacon"] ?? $0["data"]?["beacon"]) }
        var visible: [BeaconID: VisibleBeacon] = [:]
        for b in try await service.visibleBeacons(Array(Set(named)), to: user) { visible[b.id] = b }
        answer["results"] = .array(results.map { item in
            guard var o = item.objectValue, let id = beaconID(item["beacon"]?["id"]) else { return item }
            if let b = visible[id] {
                o["beacon"] = BeaconFeatureCodec.encode(b)
            } else {
                o["beacon"] = .null
                o["registry_entry"] = nil
                o["error"] = .object(["code": "unknown_beacon",
                                      "message": "no active registry entry that you may see matches this beacon"])
            }
            return .object(o)
        })
        answer["events"] = .array(events.filter { e in
            guard let id = beaconID(e["beacon"] ?? e["data"]?["beacon"]) else { return true }
            return visible[id] != nil
        })
        return .object(answer)
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

    /// `{"results":[…],"position":…|null,"events":[…]}`.
    package static func encode(_ outcome: SightingOutcome) -> JSONValue {
        .object(JSONObject([
            ("results", .array(outcome.results.map(result))),
            ("position", outcome.position.map(position) ?? .null),
            ("events", .array(outcome.events.map(\.json))),
        ]))
    }

    /// One sighting's result: its `index`, the resolved `beacon` Feature (or null), `distance_m`,
    /// `proximity`, `error` (or null), and `registry_entry` and `identity` when known.
    static func result(_ r: SightingResult) -> JSONValue {
        var o = JSONObject([("index", .int(r.index))])
        o["beacon"] = r.resolution.map { BeaconFeatureCodec.encode($0.beacon) } ?? .null
        o["distance_m"] = .optional(r.distanceM)
        o["proximity"] = r.proximity.map { .string($0.rawValue) } ?? .null
        o["error"] = r.error.map { .object(["code": .string($0.code), "message": .string($0.message)]) } ?? .null
        if let entry = r.resolution?.entry { o["registry_entry"] = .string(entry.id.rawValue) }
        if let identity = r.identity { o["identity"] = .object(RegistryCodec.encodeIdentity(identity)) }
        return .object(o)
    }

    /// The position estimated from the batch: `lat`, `lon`, `level`, `accuracy_m` (to the
    /// centimetre), `method`, the number of `anchors`, `timestamp`, whether it is `implausible`
    /// (with its `reason`) and whether it was `applied` as the user's location.
    static func position(_ p: PositionReport) -> JSONValue {
        var o = JSONObject([
            ("lat", .number(p.estimate.position.lat)), ("lon", .number(p.estimate.position.lon)), ("level", .int(p.estimate.level)),
            ("accuracy_m", .number((p.estimate.accuracyM * 100).rounded() / 100)), ("method", .string(p.estimate.method.rawValue)),
            ("anchors", .int(p.estimate.anchors)), ("timestamp", .string(p.at.rfc3339)),
        ])
        o["implausible"] = .bool(p.implausibleReason != nil)
        if let reason = p.implausibleReason { o["reason"] = .string(reason) }
        o["applied"] = .bool(p.applied)
        return .object(o)
    }
}
