import DBeaconCore
@testable import DBeaconStore
import Testing

/// The SQL written differently for SpatiaLite and PostgreSQL (`SQLDialect`) answers the same on
/// both stores.
@Suite(.bounded) struct SQLDialectTests {
    /// `contains(column, $n)` (a column among the elements of a bound array): each matching row
    /// once however often its value is listed, none for an empty array, and under `NOT` the
    /// SQL rules for NULL (a NULL row is not "not among" a list, but is not among an empty
    /// one). Run again and again, so that on PostgreSQL it runs prepared, on a generic plan.
    @Test(arguments: Backend.all) func aColumnAmongABoundArrayMeansTheSameOnBothStores(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let store = try #require(h.store as? any SQLStore)
        let cases: [(list: [String], negated: Bool, expected: [String?])] = [
            (["a", "c", "a", "zz"], false, ["a", "c"]),
            (["a", "c"], true, ["b"]),
            ([], false, []),
            ([], true, [nil, "a", "b", "c"]),
            (["b", "b", "b"], false, ["b"]),
            (["it's", "{x}"], false, ["it's", "{x}"]),
        ]
        for round in 0..<8 {
            for (list, negated, expected) in cases {
                let answer: [String?] = try await store.read { db in
                    let among = db.dialect.contains("v", "$1")
                    let rows = try await db.rows("""
                        WITH t(v) AS (VALUES ('a'), ('b'), ('c'), (NULL), ('it''s'), ('{x}'))
                        SELECT v FROM t WHERE \(negated ? "NOT " : "")\(among) AND (v IS NULL OR length(v) = 1 OR $2 = 1)
                        """, [list, list.contains("it's") ? 1 : 0])
                    return try rows.map { try $0.optionalString("v") }
                }
                let sorted = answer.sorted { ($0 ?? "") < ($1 ?? "") }
                #expect(sorted == expected, "\(backend) round \(round): \(negated ? "not " : "")among \(list)")
            }
        }
    }
}
