import AsyncHTTPClient
import DBeaconKit
import Foundation
import Hummingbird
import HummingbirdTesting
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Testing

/// The account lifecycle through the generated client (`DBeaconKit`), against a live server: the
/// answers decode with the document's schemas (a user, a page of users, a rotated token, an
/// export, an erasure report), and the calls do what they say.
@Suite(.bounded) struct DBeaconKitAccountTests {
    @Test(arguments: Backend.all) func lifecycle(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await h.app().test(.live) { live in
                let url = URL(string: "http://127.0.0.1:\(try #require(live.port))")!
                let transport = AsyncHTTPClientTransport(configuration: .init(client: http, timeout: .seconds(30)))
                try await Self.run(url: url, transport: transport)
            }
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    static func run(url: URL, transport: any ClientTransport) async throws {
        let admin = Client.dbeacon(serverURL: url, token: TestHarness.adminToken, transport: transport)
        let created = try await admin.createUser(body: .json(.init(name: "kit-user"))).created.body.json
        let id = created.value1.id
        var user = Client.dbeacon(serverURL: url, token: created.value2.token, transport: transport)

        // The user rotates their token: the new one works, the old one is 401.
        let rotated = try await user.rotateOwnToken().ok.body.json
        #expect(rotated.id == id && rotated.token.hasPrefix("dbt_"))
        if case .unauthorized = try await user.getMe() {} else { Issue.record("the old token still works") }
        user = Client.dbeacon(serverURL: url, token: rotated.token, transport: transport)
        #expect(try await user.getMe().ok.body.json.id == id)

        // The admin finds them, disables and enables them.
        let page = try await admin.listUsers(query: .init(namePrefix: "kit")).ok.body.json
        #expect(page.users.map(\.id) == [id] && page.nextCursor == nil)
        let disabled = try await admin.updateUser(path: .init(user: id), body: .json(.init(disabled: true))).ok.body.json
        #expect(disabled.value1.disabled && disabled.value1.disabledAt != nil)
        if case .unauthorized = try await user.getMe() {} else { Issue.record("a disabled user's token works") }
        _ = try await admin.updateUser(path: .init(user: id), body: .json(.init(disabled: false))).ok
        #expect(try await admin.getUser(path: .init(user: id)).ok.body.json.value2.beacons == 0)

        // The export decodes with its schema; the admin's erasure answers its report.
        let export = try await user.exportMe().ok.body.json
        #expect(export.profile.id == id && export.format == .dbeaconExport1 && export.beacons.features.isEmpty)
        let erased = try await admin.deleteUser(path: .init(user: id)).ok.body.json
        #expect(erased.id == id && erased.rows.additionalProperties["users"] == 1)
        if case .notFound = try await admin.deleteUser(path: .init(user: id)) {} else { Issue.record("erasing again is not 404") }
    }
}
