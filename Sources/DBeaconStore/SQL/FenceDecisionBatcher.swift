import DBeaconCore
import Foundation
import Synchronization

/// Fence decisions on a shared store (PostgreSQL, several `dbeacon serve` nodes), many in one
/// transaction: a group commit across users.
///
/// Each decision (`EventStore.decideFence`) needs its users' stored state, read under their
/// advisory locks, and writes its update in the same transaction. One transaction per fix paid
/// a round of statements and a commit for each. Here the decisions waiting while a transaction
/// runs are taken together into the next one (at most `maxBatch`):
///
/// 1. the advisory locks of every user of the batch, in one order (`lockFenceUsers`), then of
///    the other users near their moving beacons, as one decision alone takes them;
/// 2. one read of their locations and fence states;
/// 3. the decisions in arrival order, each on the state as the decisions before it in the batch
///    left it (a user with two fixes in one batch sees the first's outcome, as if committed);
/// 4. every update written at once (`writeFenceUpdates`, multi-row), one commit.
///
/// Per-user order is kept: a user's state is decided under their lock, and within a batch in
/// order. A decision that throws fails alone (its update is not written); a transaction that
/// fails fails every decision of the batch (after retries on a deadlock between nodes).
package final class FenceDecisionBatcher: Sendable {
    /// Decisions per transaction at most: 64, or `DBEACON_FENCE_BATCH` (1: one transaction per
    /// decision, as before batching; for comparisons).
    package let maxBatch: Int
    /// Batches in flight at once on this node: `DBEACON_FENCE_LANES`, default 1. Each lane is a
    /// transaction of its own; lanes lock users as separate nodes do (a shared user waits, a
    /// deadlock between lanes is retried as between nodes).
    package let lanes: Int

    private struct Request: Sendable {
        let users: [UserID]
        let boxes: [BoundingBox]
        let beacons: [BeaconID]
        let decide: @Sendable (FenceSnapshot) async throws -> (FenceUpdate, any Sendable)
        /// The caller, answered by the batch or, past the request's time, without it.
        let wait: BoundedWait<any Sendable>
    }

    private struct State {
        var pending: [Request] = []
        var running = 0
        var taken = 0
    }

    private let state = Mutex(State())

    package init(maxBatch: Int = ProcessInfo.processInfo.environment["DBEACON_FENCE_BATCH"].flatMap { Int($0) } ?? 64,
                 lanes: Int = ProcessInfo.processInfo.environment["DBEACON_FENCE_LANES"].flatMap { Int($0) } ?? 1) {
        self.maxBatch = max(1, maxBatch)
        self.lanes = max(1, lanes)
    }

    /// Decisions written so far, and transactions (for tests and metrics).
    package var counts: (decisions: Int, transactions: Int) { totals.withLock { $0 } }
    private let totals = Mutex((decisions: 0, transactions: 0))

    /// Decisions taken into a batch so far (for tests: a batch has started).
    package var taken: Int { state.withLock { $0.taken } }

    /// `decideFence` through the batch: returns once the decision's transaction committed.
    func decide<T: Sendable, Store: SQLStore>(lock users: [UserID], near boxes: [BoundingBox], inside beacons: [BeaconID],
                                              on store: Store,
                                              _ decide: @escaping @Sendable (FenceSnapshot) async throws -> (FenceUpdate, T)) async throws -> T {
        let end = DatabaseDeadline.request
        let value = try await withCheckedThrowingContinuation { (c: CheckedContinuation<any Sendable, any Error>) in
            let request = Request(users: users, boxes: boxes, beacons: beacons, decide: { snapshot in
                let (update, result) = try await decide(snapshot)
                return (update, result)
            }, wait: BoundedWait(c, until: end))
            if request.wait.isAbandoned { return } // no time left: answered already
            let lead = state.withLock { s in
                s.pending.append(request)
                if s.running >= lanes { return false }
                s.running += 1
                return true
            }
            // (The batch answers every waiting request: not bounded by the first one's deadline;
            // each waits no longer than its own, `BoundedWait`.)
            if lead { DatabaseDeadline.unboundedTask { await self.drain(store) } }
        }
        guard let result = value as? T else { throw DBeaconError.internalError("a fence decision's result has another type") }
        return result
    }

    /// Runs batches until none is waiting.
    private func drain<Store: SQLStore>(_ store: Store) async {
        while true {
            let batch: [Request] = state.withLock { s in
                let taken = Array(s.pending.prefix(maxBatch))
                s.pending.removeFirst(taken.count)
                s.taken += taken.count
                if taken.isEmpty { s.running -= 1 }
                return taken
            }
            if batch.isEmpty { return }
            await run(batch, on: store)
        }
    }

    private func run<Store: SQLStore>(_ taken: [Request], on store: Store) async {
        var attempt = 0
        while true {
            // A request answered 503 past its time (while it waited, or before a retry) is not
            // decided behind its back.
            let batch = taken.filter { !$0.wait.isAbandoned }
            if batch.isEmpty { return }
            do {
                let results = try await store.write { db, log in try await Self.decide(batch, db: db, log: &log, as: Store.self) }
                totals.withLock { $0.decisions += batch.count; $0.transactions += 1 }
                for (request, result) in zip(batch, results) { request.wait.resume(with: result) }
                return
            } catch let error as DBeaconError where error.code == "database_busy" && attempt < 5 {
                // Two nodes locked the same users in opposite orders; this batch was chosen to give way.
                attempt += 1
                try? await Task.sleep(for: .milliseconds(Int64(5 << attempt)))
            } catch {
                for request in batch { request.wait.resume(with: .failure(error)) }
                return
            }
        }
    }

    /// The batch's transaction body: locks, one read, the decisions in order, one write.
    private static func decide<Store: SQLStore>(_ batch: [Request], db: any SQLSession, log: inout SQLWriteLog,
                                                as: Store.Type) async throws -> [Result<any Sendable, any Error>] {
        var locked = Set(batch.flatMap(\.users))
        try await Store.lockFenceUsers(db, locked)
        let others = Set(try await Store.fenceUsers(db, near: batch.flatMap(\.boxes), inside: batch.flatMap(\.beacons)))
            .subtracting(locked)
        if !others.isEmpty {
            try await Store.lockFenceUsers(db, others)
            locked.formUnion(others)
        }
        let ids = locked.sorted().map(\.rawValue)
        // Under their locks, the users still exist: one erased meanwhile (erasure takes the same
        // lock) fails its own decision, not the batch (its rows would break foreign keys).
        let asked = Set(batch.flatMap(\.users)).sorted().map(\.rawValue)
        let existing = Set(try await db.rows("SELECT id FROM users WHERE \(db.dialect.contains("id", "$1"))", [asked])
            .map { UserID(uncheckedRawValue: try $0.string("id")) })
        var locations: [UserID: UserLocation] = [:]
        for row in try await db.rows("SELECT * FROM user_locations WHERE \(db.dialect.contains("user_id", "$1"))", [ids]) {
            let l = try Store.location(from: row)
            locations[l.user] = l
        }
        var states: [UserID: [FenceState]] = [:]
        for row in try await db.rows("SELECT * FROM fence_states WHERE \(db.dialect.contains("user_id", "$1"))", [ids]) {
            states[UserID(uncheckedRawValue: try row.string("user_id")), default: []].append(try Store.fenceState(from: row))
        }
        var updates: [FenceUpdate] = []
        var results: [Result<any Sendable, any Error>] = []
        for request in batch {
            guard request.users.allSatisfy(existing.contains) else {
                results.append(.failure(DBeaconError.unauthorized("the account no longer exists")))
                continue
            }
            // A decision about moving beacons sees every user near any of the batch's (a
            // superset of its own: all locked, the others simply not covered).
            var users = Set(request.users)
            if !request.boxes.isEmpty || !request.beacons.isEmpty { users.formUnion(others) }
            let sorted = users.sorted()
            var mine: [UserID: [FenceState]] = [:]
            for u in sorted { if let s = states[u] { mine[u] = s } }
            let snapshot = FenceSnapshot(users: sorted, locations: sorted.compactMap { locations[$0] }, states: mine)
            do {
                let (update, result) = try await request.decide(snapshot)
                apply(update, locations: &locations, states: &states)
                updates.append(update)
                results.append(.success(result))
            } catch {
                results.append(.failure(error))
            }
        }
        try await Store.writeFenceUpdates(db, updates, log: &log)
        return results
    }

    /// The stored state after `update` (what `writeFenceUpdates` writes for it).
    static func apply(_ update: FenceUpdate, locations: inout [UserID: UserLocation], states: inout [UserID: [FenceState]]) {
        for l in update.locations { locations[l.user] = l }
        for r in update.removed { states[r.user]?.removeAll { $0.beacon == r.beacon } }
        for s in update.states {
            var list = states[s.user] ?? []
            list.removeAll { $0.beacon == s.state.beacon }
            list.append(s.state)
            states[s.user] = list
        }
    }
}
