import DBeaconCore
package import DBeaconStore
package import Logging
import ServiceLifecycle

/// The background clock of the event machinery: lifetime starts and ends (`beacon.started` /
/// `beacon.ended` for followers, and fence re-evaluation of who is inside), dwell times, and
/// event-log retention. Transitions are found by time window since the last committed tick,
/// which is stored, so transitions during a restart are reported once.
package struct LifetimeTicker: Service {
    package let store: any DBeaconStore
    package let fences: FenceEngine
    package let clock: any WallClock
    package let logger: Logger
    package var interval: Duration = .seconds(1)
    /// Events older than this are deleted (once delivered); nil keeps them forever.
    package var retentionDays: Double? = 30
    /// How long before a meeting starts its invitees and attendees get `meeting.starting`;
    /// 0 sends no reminders.
    package var meetingReminderSeconds: Double = 900

    package init(store: any DBeaconStore, fences: FenceEngine, clock: any WallClock, logger: Logger) {
        self.store = store
        self.fences = fences
        self.clock = clock
        self.logger = logger
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            var lastRetention = Timestamp(millis: 0)
            while !Task.isCancelled {
                do {
                    try await tickOnce()
                    let now = clock.now()
                    if let days = retentionDays, now.seconds(since: lastRetention) > 3600 {
                        let removed = try await store.deleteEvents(before: now.adding(seconds: -days * 86_400))
                        if removed > 0 { logger.info("event retention", metadata: ["deleted": "\(removed)"]) }
                        lastRetention = now
                    }
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("ticker failed", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// One tick: lifetime transitions since the last tick, then dwell times.
    package func tickOnce() async throws {
        let now = clock.now()
        let last = try await store.setting(StoreSetting.lifetimeTick).flatMap(Int64.init).map(Timestamp.init(millis:))
        if let last, last < now {
            let (started, ended) = try await store.lifetimeTransitions(after: last, upTo: now)
            var fanOuts: [(beacon: BeaconID, fanOut: FollowerFanOut)] = []
            for b in started {
                let at = b.lifetime?.start ?? now
                fanOuts.append((b.id, FollowerFanOut(type: .started, data: ["beacon": .string(b.id.rawValue), "name": .string(b.name),
                                                                            "at": .string(at.rfc3339)], at: at, requireAlive: false)))
            }
            for b in ended {
                let at = b.lifetime?.end ?? now
                fanOuts.append((b.id, FollowerFanOut(type: .ended, data: ["beacon": .string(b.id.rawValue), "name": .string(b.name),
                                                                          "at": .string(at.rfc3339)], at: at, requireAlive: false)))
            }
            if meetingReminderSeconds > 0 {
                // Reminders fall due at start − lead; the same stored tick reports each once.
                let lead = meetingReminderSeconds
                for b in try await store.upcomingStarts(service: ServiceKind.meeting, after: last.adding(seconds: lead),
                                                         upTo: now.adding(seconds: lead)) {
                    guard let start = b.lifetime?.start else { continue }
                    let data = JSONObject([
                        ("beacon", .string(b.id.rawValue)), ("meeting", .string(b.id.rawValue)), ("name", .string(b.name)),
                        ("organizer", .string(b.owner.rawValue)), ("start", .string(start.rfc3339)),
                        ("end", .optional(b.lifetime?.end?.rfc3339)), ("starts_in_s", .number(lead)),
                    ])
                    fanOuts.append((b.id, FollowerFanOut(type: .meetingStarting, data: data, at: start.adding(seconds: -lead),
                                                         requireAlive: false, alsoMembers: true)))
                }
            }
            try await store.commitLifetimeTick(upTo: now, fanOuts: fanOuts)
            for b in started where b.isAlive(at: now) { try await fences.beaconChanged(b, reason: "started") }
            for b in ended { try await fences.beaconChanged(b, reason: "ended") }
        } else if last == nil {
            try await store.commitLifetimeTick(upTo: now, fanOuts: [])
        }
        try await fences.tick()
    }
}

