/// Other processes' changes reach a PostGIS store through LISTEN/NOTIFY (see `PostgresStore`):
/// nothing to poll, and the node that wrote a change evaluates its own users' fences.
extension PostgresStore: BeaconChangeFeed {
    package func observeRemoteFenceWrites(_ handler: @escaping @Sendable () -> Void) {}
    package var remoteChangePollInterval: Duration? { nil }
    package func pollRemoteChanges() async throws {}
    package var remoteChangesNeedFenceEvaluation: Bool { false }
    package func changeStamp() async throws -> ChangeStamp? { nil }
    package func withSettledChanges<T: Sendable>(_ body: @Sendable (ChangeStamp) throws -> T) async throws -> T? { nil }
}
