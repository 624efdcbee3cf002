package import DBeaconServices
package import DBeaconStore
package import Logging

/// The four services of the Digital Beacon concept, wired to one store and registered with
/// the fence engine for the location fixes they react to.
package struct DomainServices: Sendable {
    package let meetings: MeetingService
    package let groups: GroupService
    package let tours: TourService
    package let promotions: PromotionService

    package static func make(beacons: BeaconService, store: any ServiceBackingStore, fences: FenceEngine, config: ServiceConfig,
                             logger: Logger) async -> DomainServices {
        let services = DomainServices(
            meetings: MeetingService(beacons: beacons, store: store),
            groups: GroupService(beacons: beacons, store: store, config: config, logger: logger),
            tours: TourService(beacons: beacons, store: store, config: config, logger: logger),
            promotions: PromotionService(beacons: beacons, store: store, config: config))
        await fences.addListener(services.groups)
        await fences.addListener(services.tours)
        return services
    }
}
