import DBeaconCore
package import DBeaconHTTP
import DBeaconIndex
import DBeaconServices
import DBeaconStore
package import Hummingbird
package import Logging

/// The composition root: `dbeacon serve`, the CLI on a database file and the tests build the
/// application here, from a configuration, on the services `AppServices` wires up.

/// Builds the HTTP application on already-made services (tests use this with a test config).
package func buildApplication(_ services: AppServices, logger: Logger) -> some ApplicationProtocol {
    DBeaconHTTP.buildApplication(services.routerServices, background: services.backgroundServices, logger: logger)
}

/// Opens the database and builds the application described by `config`.
package func buildApplication(_ config: AppConfig, logger: Logger) async throws -> some ApplicationProtocol {
    let services = try await AppServices.make(config, logger: logger)
    if let token = services.generatedAdminToken {
        print("Generated admin token (shown only this once; store it safely): \(token)")
    }
    return buildApplication(services, logger: logger)
}

/// The routes on these services (the CLI's in-process transport, tests).
package func buildRouter(_ services: AppServices, metrics: AppMetrics = AppMetrics()) -> Router<AppRequestContext> {
    DBeaconHTTP.buildRouter(services.routerServices, metrics: metrics)
}

extension AppServices {
    /// What the routes get: the services, none of the store or the index.
    package var routerServices: RouterServices {
        var settings = HTTPSettings()
        settings.host = config.host
        settings.port = config.port
        settings.maxBodyBytes = config.maxBodyBytes
        settings.maxImportBytes = config.maxImportBytes
        settings.metricsToken = config.metricsToken
        settings.databaseTimeoutSeconds = config.databaseTimeoutSeconds
        settings.readinessTimeoutSeconds = config.readinessTimeoutSeconds
        settings.remoteDatabase = StoreLocation.isPostgres(config.databasePath)
        settings.eventStreamHeartbeatSeconds = config.eventStreamHeartbeatSeconds
        settings.eventStreamMaxSeconds = config.eventStreamMaxSeconds
        settings.connections = config.connections
        settings.rateLimits = config.rateLimits
        settings.console = config.console
        let memory = engine as? MemoryCoverageEngine
        let regions = RegionService(beacons: beacons, registry: store, changes: regionChanges)
        return RouterServices(
            settings: settings, clock: clock, auth: auth, accounts: accounts, beacons: beacons, fences: fences, feed: feed,
            notifier: notifier, webhooks: webhooks, meetings: domain.meetings, groups: domain.groups, tours: domain.tours,
            promotions: domain.promotions, registry: registry, sightings: sightings, regions: regions,
            phones: PhoneService(fences: fences, regions: regions, sightings: sightings, groups: domain.groups, devices: store, feed: feed,
                                 clock: clock, states: phoneStates),
            health: NodeHealth(store: store, pendingPolygons: { memory?.pendingCount ?? 0 }))
    }
}
