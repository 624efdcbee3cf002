package import DBeaconCore
package import Hummingbird
import Logging

/// The context of every request; `principal` is filled in by `AuthMiddleware` on `/v1`.
package struct AppRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    package var principal: Principal?
    /// The client's IP address (no port), for limits per client; "unknown" in router tests.
    package let clientAddress: String

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        principal = nil
        clientAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// The context of authenticated routes: the principal is not optional, so a handler under
/// `/v1` cannot forget the check.
package struct AuthenticatedContext: ChildRequestContext {
    package var coreContext: CoreRequestContextStorage
    package let principal: Principal
    package let clientAddress: String

    package init(context: AppRequestContext) throws {
        guard let principal = context.principal else { throw DBeaconError.unauthorized() }
        self.coreContext = context.coreContext
        self.principal = principal
        self.clientAddress = context.clientAddress
    }
}
