package import DBeaconCore
package import DBeaconStore

/// Reading the event log (`GET /v1/events`, `dbeacon events`) with the visibility rule of the
/// model applied as of now, exactly as the webhook deliverer applies it before each attempt
/// (`Event.isReadable`): a caller who lost sight of a beacon no longer reads what happened
/// to it, except the notice of losing it, and relationship targets they may not see are
/// left out of `beacon.updated` / `meeting.updated` values.
package struct EventFeed: Sendable {
    let store: any DBeaconStore
    package let beacons: BeaconService

    package init(store: any DBeaconStore, beacons: BeaconService) {
        self.store = store
        self.beacons = beacons
    }

    /// Where a page starts: after an event id (only the caller's own events resolve) or a cursor.
    package func position(after id: EventID, by principal: Principal) async throws -> Int64? {
        guard let position = try await store.eventPosition(id: id) else { return nil }
        guard let user = principal.userID else { return position }
        // Someone else's event id is answered like an unknown one: ids are not an oracle.
        let page = try await store.events(recipient: user, after: position - 1, limit: 1)
        return page.items.first?.id == id ? position : nil
    }

    /// Where a live stream without a resume point starts: after the newest event.
    package func latestPosition() async throws -> Int64 {
        try await store.latestEventPosition()
    }

    /// The caller's events after `after` (every event for the operator), oldest first. A page
    /// may hold fewer than `limit` events when some were withheld; `next` is then still set.
    package func events(by principal: Principal, after: Int64?, limit: Int) async throws -> Page<Event> {
        guard let user = principal.userID else { return try await store.events(recipient: nil, after: after, limit: limit) }
        var kept: [Event] = []
        var cursor = after
        var next: Int64? = nil
        // Withheld events must not shorten pages much: read on (a few rounds at most).
        for _ in 0..<4 {
            let page = try await store.events(recipient: user, after: cursor, limit: limit - kept.count)
            kept += try await readable(page.items, for: user)
            next = page.next
            guard let n = page.next, kept.count < limit else { break }
            cursor = n
        }
        return Page(items: kept, next: next)
    }

    /// `user`'s events of `types` after `after`, oldest first, as they may read them now, and
    /// the log position they were read through (`Page.next` is set when more are waiting): what
    /// a phone reads for its group alerts without reading every other event addressed to them.
    package func events(of types: [EventType], for user: UserID, after: Int64, limit: Int) async throws -> (page: Page<Event>, through: Int64) {
        let (page, through) = try await store.events(recipient: user, after: after, types: types, limit: limit)
        return (Page(items: try await readable(page.items, for: user), next: page.next), through)
    }

    /// The events among `events` that `user` may still read, as they may read them now.
    package func readable(_ events: [Event], for user: UserID) async throws -> [Event] {
        var result: [Event] = []
        for event in try await beacons.gate.readable(events, for: user) {
            result.append(try await beacons.redactingValues(of: event))
        }
        return result
    }
}
