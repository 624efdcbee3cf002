package import DBeaconCore
package import DBeaconServices
package import Hummingbird
import Logging
package import NIOCore

/// The context of every request; `principal` is filled in by `AuthMiddleware` on `/v1`.
package struct AppRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    package var principal: Principal?
    /// The device whose token authenticated the request (`dbd_…`), if it was one.
    package var device: DeviceID?
    /// The SHA-256 of the token presented (an open event stream checks it again when the
    /// account changes); nil for a context made in process.
    package var tokenHash: [UInt8]?
    /// Seals and opens page cursors (set with the principal).
    package var cursors: PageCursor?
    /// The client's IP address (no port), for limits per client; "unknown" in router tests.
    package let clientAddress: String
    /// The connection (the event stream watches it and closes it at the end of the stream).
    package let channel: any Channel

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
        principal = nil
        device = nil
        tokenHash = nil
        cursors = nil
        clientAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// The context of authenticated routes: the principal is not optional, so a handler under
/// `/v1` cannot forget the check.
package struct AuthenticatedContext: ChildRequestContext {
    package var coreContext: CoreRequestContextStorage
    package let principal: Principal
    /// The device whose token authenticated the request, if it was a device token.
    package let device: DeviceID?
    /// The SHA-256 of the token presented (nil in process).
    package let tokenHash: [UInt8]?
    package let clientAddress: String
    package let channel: any Channel
    let cursors: PageCursor

    package init(context: AppRequestContext) throws {
        guard let principal = context.principal, let cursors = context.cursors else { throw DBeaconError.unauthorized() }
        self.coreContext = context.coreContext
        self.principal = principal
        self.device = context.device
        self.tokenHash = context.tokenHash
        self.cursors = cursors
        self.clientAddress = context.clientAddress
        self.channel = context.channel
    }
}

extension AuthenticatedContext {
    /// The caller as `AuthService` knows it (to watch an open stream's credential).
    var caller: AuthService.Caller { AuthService.Caller(principal: principal, device: device, tokenHash: tokenHash) }

    /// The `next_cursor` of a page, sealed for this caller (opaque: no position shows).
    func cursor(after position: Int64?) async throws -> String? {
        try await cursors.seal(position, for: principal)
    }

    /// The position a `cursor` parameter names for this caller: 400 `invalid_cursor` for one of
    /// another form, 404 for one sealed for someone else (as for another reader's event id).
    func position(of raw: String?, key: String = "cursor") async throws -> Int64? {
        guard let raw else { return nil }
        if let position = try await openCursor(raw, key: key) { return position }
        throw DBeaconError(.badRequest, code: "invalid_cursor", message: "\(key) is not a cursor returned by this API", path: key)
    }

    /// The position `raw` names if it is a cursor sealed for this caller; 404 for one sealed for
    /// someone else; nil for a value of another form.
    func openCursor(_ raw: String, key: String) async throws -> Int64? {
        if let position = try await cursors.open(raw, for: principal) { return position }
        if PageCursor.isWellFormed(raw) { throw DBeaconError.notFound("cursor", path: key) }
        return nil
    }
}
