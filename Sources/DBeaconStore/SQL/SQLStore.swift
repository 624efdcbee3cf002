package import DBeaconCore
import Synchronization

/// What a write transaction did besides its rows, for the store to announce after commit.
package struct SQLWriteLog: Sendable {
    /// Beacon changes, in order, for in-memory indexes (this process's and other processes').
    package var changes: [BeaconChange] = []
    /// Fence states or user locations were written (another process's fence engine reloads).
    package var fencesChanged = false
    /// Accounts whose credentials changed (a token replaced, disabled or enabled, erased): told
    /// to this process's and other processes' observers after commit (`AccountStore`).
    package var accountsChanged: [UserID] = []
    /// Beacons whose stored fields changed without an upsert of their own (a follower count, a
    /// relationship removed with its deleted target), with the number of changes logged when
    /// they were touched: `settleTouched` reads them again as upserts before the transaction
    /// commits, so in-memory copies stay exact.
    var touched: [(id: BeaconID, at: Int)] = []

    package mutating func touch(_ id: BeaconID) { touched.append((id, changes.count)) }

    package init() {}
}

extension SQLStore {
    package func readStatement(_ query: @Sendable (SQLDialect) -> (String, [any SQLArgument])) async throws -> [SQLRow] {
        let (sql, arguments) = query(dialect)
        return try await read { db in try await db.rows(sql, arguments) }
    }

    /// Appends an upsert of every touched beacon, as it is now in the transaction.
    static func settleTouched(_ log: inout SQLWriteLog, db: any SQLSession) async throws {
        guard !log.touched.isEmpty else { return }
        // A beacon upserted or deleted after it was last touched is reported as it is already.
        var lastTouch: [BeaconID: Int] = [:]
        var order: [BeaconID] = []
        for (id, at) in log.touched {
            if lastTouch.updateValue(at, forKey: id) == nil { order.append(id) }
        }
        let ids = order.filter { id in
            !log.changes[lastTouch[id]!...].contains {
                switch $0 {
                case .upsert(let b): b.id == id
                case .delete(let d): d == id
                case .move: false
                }
            }
        }
        log.touched = []
        for b in try await beacons(ids: ids, db: db) { log.changes.append(.upsert(b)) }
    }
}

/// A store whose every area (beacons, users, events and fences, webhooks, services,
/// registry) is implemented once, in the `SQLStore+…` extensions, over `SQLSession`. A
/// backend supplies transactions, change announcement and the dialect:
///
/// * `SpatiaLiteStore`: one SQLite writer connection (a write holds the whole database) and a
///   pool of readers, each read in its own snapshot;
/// * `PostgresStore`: pooled PostgreSQL connections; rows that decide a write are locked
///   (`SQLDialect.forUpdate`), changes are announced with NOTIFY.
package protocol SQLStore: ServiceBackingStore, RegistryStore, AnyObject {
    var dialect: SQLDialect { get }
    /// Who is told of account changes (`observeAccountChanges`).
    var accountObservers: AccountObservers { get }
    /// Runs `body` in a read-only snapshot, so multi-query reads see one state.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T
    /// Runs one read-only statement (`query` builds it for the dialect): a single statement
    /// sees one state by itself, so PostgreSQL runs it without BEGIN and COMMIT (one round trip
    /// instead of three); SpatiaLite in `read`.
    func readStatement(_ query: @Sendable (SQLDialect) -> (String, [any SQLArgument])) async throws -> [SQLRow]
    /// Runs `body` in a write transaction and, after commit, reports what `log` collected.
    @discardableResult
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession, inout SQLWriteLog) async throws -> T) async throws -> T
    /// Who claims webhook deliveries in this process (PostGIS: its listener session, so only
    /// the deliveries of processes that are gone are reclaimed); nil on SpatiaLite.
    var deliveryClaimant: String? { get }
    /// Batches shared fence decisions into common transactions (PostgreSQL); nil: one
    /// transaction per decision.
    var fenceBatcher: FenceDecisionBatcher? { get }
    /// Reads made for every location fix, coalesced across concurrent fixes (PostgreSQL); nil:
    /// one statement per read (SpatiaLite, in-process: nothing to save).
    var fixReads: FixReadCoalescers? { get }
    /// Users known to be in no group, so a fix of theirs needs no read of groups (SpatiaLite:
    /// this process sees every membership change); nil: every fix reads (PostgreSQL, where
    /// other nodes add members).
    var grouplessUsers: GrouplessUsers? { get }
    /// The newest log position of each event type, where this process sees every commit as it
    /// happens (SpatiaLite); nil: readers read the log (PostgreSQL, where other nodes append).
    var eventTypeMarks: EventTypeMarks? { get }
}

/// The users `groups(involving:)` last found in no group, for a store whose membership changes
/// all reach this process: a local join or new group removes its user at once (after commit),
/// another process's commit (the CLI on the same file) empties the set when the store polls for
/// it, within a quarter second. A read that began before a change is not remembered after it
/// (`generation`), so the set never outlives a membership it did not see.
package final class GrouplessUsers: Sendable {
    private struct State {
        var users = Set<UserID>()
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Beyond this many users the set starts over (bounds its memory).
    static let capacity = 1_000_000

    package init() {}

    /// Whether `user` is known to be in no group; else the generation to pass to `remember`.
    func lookup(_ user: UserID) -> (groupless: Bool, generation: UInt64) {
        state.withLock { ($0.users.contains(user), $0.generation) }
    }

    /// Remembers that a read begun at `generation` found `user` in no group, unless a
    /// membership changed since.
    func remember(_ user: UserID, readAt generation: UInt64) {
        state.withLock { s in
            guard s.generation == generation else { return }
            if s.users.count >= Self.capacity { s.users.removeAll() }
            s.users.insert(user)
        }
    }

    /// `user` may be in a group now (they created or joined one), or their account changed (an
    /// erased user's id is not kept).
    func involved(_ user: UserID) {
        state.withLock { s in
            s.generation &+= 1
            s.users.remove(user)
        }
    }

    /// Another process may have changed memberships.
    func forgetAll() {
        state.withLock { s in
            s.generation &+= 1
            s.users.removeAll()
        }
    }

    /// How many users are remembered (tests).
    package var count: Int { state.withLock { $0.users.count } }
}

/// The per-fix reads of the services that react to fixes, one `ReadCoalescer` each.
package final class FixReadCoalescers: Sendable {
    /// A user's groups (`groups(involving:)`).
    let groups = ReadCoalescer<UserID, [TrackedGroup]>()
    /// The user's followed tours through given places (`followedTours(user:containing:)`).
    let tours = ReadCoalescer<FollowedToursRequest, [FollowedTourStop]>()
    /// The credential of every request's token (`credential(tokenHash:device:)`): not a fix's
    /// read, but as frequent, and coalesced the same way.
    let credentials = ReadCoalescer<CredentialRequest, StoredCredential?>()

    package init() {}

    /// Statements run and requests answered, both kinds together.
    package var counts: (statements: Int, requests: Int) {
        let (g, t) = (groups.counts, tours.counts)
        return (g.statements + t.statements, g.requests + t.requests)
    }
}

struct FollowedToursRequest: Sendable {
    let user: UserID
    let places: [BeaconID]
}

package typealias FollowedTourStop = (tour: BeaconID, place: BeaconID, since: Timestamp)

