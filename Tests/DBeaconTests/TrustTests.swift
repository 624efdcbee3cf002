import DBeaconApp
import DBeaconCore
import DBeaconHTTP
import DBeaconServices
import Foundation
import HummingbirdTesting
import Testing

/// The privacy leaks found by outside probing (issue 11), each tried again as the attacker
/// would, on both stores.
@Suite(.bounded) struct TrustTests {
    static let here = "lat=48.7784&lon=9.18"

    /// `at=` only narrows what a non-owner sees: no meeting before its start, no ended beacon.
    @Test(arguments: Backend.all) func atDoesNotBypassLifetimes(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)  // 2026-11-21T12:00Z
        let (_, ann) = try await h.user("ann")
        let (_, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let meeting = try await client.call(.post, "/v1/meetings", token: ann, json: [
                "name": "Surprise", "location": ["lat": 48.7784, "lon": 9.18], "perimeter": ["type": "Circle", "radius_m": 200],
                "start": "2026-11-21T14:00:00Z", "end": "2026-11-21T16:00:00Z",
            ])
            let meetingID = try #require(meeting.json?["id"]?.stringValue)
            let ended = try await client.call(.post, "/v1/beacons", token: ann, json: feature(
                name: "Yesterday's stall", perimeter: circle(200), lifetime: ("2026-11-20T08:00:00Z", "2026-11-20T18:00:00Z")))
            let endedID = try #require(ended.json?["id"]?.stringValue)
            let promo = try await client.call(.post, "/v1/promotions", token: ann, json: [
                "name": "Evening deal", "location": ["lat": 48.7784, "lon": 9.18], "perimeter": ["type": "Circle", "radius_m": 200],
                "category": "food", "start": "2026-11-21T18:00:00Z", "end": "2026-11-21T20:00:00Z",
            ])
            let promoID = try #require(promo.json?["id"]?.stringValue, "\(promo.text)")

            for (at, hidden) in [("2026-11-21T14:30:00Z", meetingID), ("2026-11-20T12:00:00Z", endedID),
                                 ("2026-11-21T18:30:00Z", promoID)] {
                let q = "\(Self.here)&at=\(at)"
                #expect(!(try await client.call(.get, "/v1/nearby?\(q)", token: bob).featureIDs.contains(hidden)), "\(at)")
                #expect(try await client.call(.get, "/v1/nearby?\(q)", token: ann).featureIDs.contains(hidden), "the owner may look ahead")
            }
            let q = "\(Self.here)&at=2026-11-21T14:30:00Z"
            #expect(try await client.call(.get, "/v1/meetings/nearby?\(q)", token: bob).featureIDs == [])
            #expect(try await client.call(.get, "/v1/meetings/nearby?\(q)", token: ann).featureIDs == [meetingID])
            let promoAt = "\(Self.here)&at=2026-11-21T18:30:00Z"
            #expect(try await client.call(.get, "/v1/promotions/nearby?\(promoAt)", token: bob).featureIDs == [])
            #expect(try await client.call(.get, "/v1/promotions/pick?\(promoAt)", token: bob).json?["promotion"] == .null)
            #expect(try await client.call(.get, "/v1/beacons/\(meetingID)", token: bob).status == .notFound)
        }
    }

    /// A member links a public beacon (and a tour) to a private beacon: non-members never see its id.
    @Test(arguments: Backend.all) func privateIDsDoNotLeakThroughRelationships(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, dave) = try await h.user("dave")
        let (carlID, carl) = try await h.user("carl")
        let (_, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let secret = try await client.call(.post, "/v1/beacons", token: dave,
                                               json: feature(name: "Back room", members: [carlID]))
            let secretID = try #require(secret.json?["id"]?.stringValue)
            let place = try await client.call(.post, "/v1/beacons", token: carl, json: feature(name: "Fountain", lat: 48.779))
            let placeID = try #require(place.json?["id"]?.stringValue)
            let linked = try await client.call(.post, "/v1/beacons", token: carl, json: feature(name: "Bar", relationships: [
                ["type": "related", "target": .string(secretID)], ["type": "related", "target": .string(placeID)],
            ]))
            #expect(linked.status == .created, "\(linked.text)")
            let barID = try #require(linked.json?["id"]?.stringValue)
            func targets(_ r: JSONResponse) -> [String] {
                (r.json?["properties"]?["relationships"]?.arrayValue ?? []).compactMap { $0["target"]?.stringValue }
            }
            #expect(targets(try await client.call(.get, "/v1/beacons/\(barID)", token: carl)) == [secretID, placeID])
            let seen = try await client.call(.get, "/v1/beacons/\(barID)", token: bob)
            #expect(targets(seen) == [placeID])
            #expect(!seen.text.contains(secretID))
            #expect(!(try await client.call(.get, "/v1/nearby?\(Self.here)", token: bob).text.contains(secretID)))
            #expect(!(try await client.call(.get, "/v1/beacons", token: bob).text.contains(secretID)))
            #expect(!(try await client.call(.get, "/v1/beacons/\(barID)/related", token: bob).text.contains(secretID)))

            // A tour with a private stop: the stop and its id are left out of every part
            let tour = try await client.call(.post, "/v1/tours", token: carl, json: [
                "name": "Night walk", "stops": [["beacon": .string(placeID)], ["beacon": .string(secretID)]],
            ])
            let tourID = try #require(tour.json?["tour"]?["id"]?.stringValue, "\(tour.text)")
            let bobTour = try await client.call(.get, "/v1/tours/\(tourID)", token: bob)
            #expect(bobTour.status == .ok)
            #expect(!bobTour.text.contains(secretID))
            #expect(bobTour.json?["stops"]?.arrayValue?.count == 1)
            #expect(try await client.call(.get, "/v1/tours/\(tourID)", token: carl).json?["stops"]?.arrayValue?.count == 2)

            // Edits reach followers without the hidden target
            #expect(try await client.call(.post, "/v1/beacons/\(barID)/followers", token: bob).status == .created)
            let edit = try await client.call(.patch, "/v1/beacons/\(barID)", token: carl, json: ["properties": ["relationships": [
                ["type": "related", "target": .string(secretID)], ["type": "tour", "target": .string(placeID), "order": 1],
            ]]])
            #expect(edit.status == .ok, "\(edit.text)")
            let events = try await client.call(.get, "/v1/events", token: bob)
            #expect(events.json?["events"]?.arrayValue?.last?["type"] == "beacon.updated")
            #expect(!events.text.contains(secretID))
        }
    }

    /// Client-chosen ids live in the caller's namespace: a hidden id and a free one outside it
    /// get the same answer.
    @Test(arguments: Backend.all) func clientIDsAreNotAnExistenceOracle(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (daveID, dave) = try await h.user("dave")
        let (bobID, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let hiddenID = BeaconID.namespace(of: daveID) + "party"
            let made = try await client.call(.post, "/v1/beacons", token: dave,
                                             json: feature(name: "Party", members: [], extra: []).withID(hiddenID))
            #expect(made.status == .created, "\(made.text)")
            let taken = try await client.call(.post, "/v1/beacons", token: bob, json: feature(name: "x").withID(hiddenID))
            let free = try await client.call(.post, "/v1/beacons", token: bob,
                                             json: feature(name: "x").withID(BeaconID.namespace(of: daveID) + "free"))
            #expect(taken.status == .unprocessableContent && taken.errorCode == "id_outside_namespace" && taken.errorPath == "id")
            #expect(free.status == taken.status && free.errorCode == taken.errorCode)
            #expect(free.text.replacingOccurrences(of: "free", with: "") == taken.text.replacingOccurrences(of: "party", with: ""),
                    "the two answers differ only in the echoed id")

            let mine = BeaconID.namespace(of: bobID) + "lunch"
            let me = try await client.call(.get, "/v1/me", token: bob)
            #expect(me.json?["beacon_id_prefix"] == .string(BeaconID.namespace(of: bobID)))
            #expect(try await client.call(.post, "/v1/beacons", token: bob, json: feature(name: "Lunch").withID(mine)).status == .created)
            let again = try await client.call(.post, "/v1/beacons", token: bob, json: feature(name: "Lunch").withID(mine))
            #expect(again.status == .conflict && again.errorCode == "beacon_exists")
        }
    }

    /// Losing access also takes away the event history of the beacon (not the notice of losing it).
    @Test(arguments: Backend.all) func eventsFollowTheVisibilityRuleAsOfNow(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, dave) = try await h.user("dave")
        let (bobID, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let club = try await client.call(.post, "/v1/beacons", token: dave, json: feature(name: "Club", members: [bobID]))
            let id = try #require(club.json?["id"]?.stringValue)
            #expect(try await client.call(.post, "/v1/beacons/\(id)/followers", token: bob).status == .created)
            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: dave, json: ["properties": ["name": "Club night"]]).status == .ok)
            let before = try await client.call(.get, "/v1/events", token: bob)
            #expect(before.json?["events"]?.arrayValue?.map { $0["type"] } == ["beacon.updated"])
            let eventID = try #require(before.json?["events"]?.arrayValue?.first?["id"]?.stringValue)

            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: dave,
                                          json: ["properties": ["visibility": ["members": []]]]).status == .ok)
            let after = try await client.call(.get, "/v1/events", token: bob)
            #expect(after.json?["events"]?.arrayValue == [], "\(after.text)")
            #expect(!after.text.contains("Club"))
            // Someone else's event id is not a cursor (nor an oracle)
            let (_, eve) = try await h.user("eve")
            let foreign = try await client.call(.get, "/v1/events?after=\(eventID)", token: eve)
            let unknown = try await client.call(.get, "/v1/events?after=evt_doesnotexist", token: eve)
            #expect(foreign.status == .notFound && foreign.errorPath == "after")
            #expect(foreign.errorCode == unknown.errorCode)
        }
    }

    /// `properties.service` is the services' to set: a client's value is refused, never dropped.
    @Test(arguments: Backend.all) func serviceCannotBeChosenByClients(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            for value: JSONValue in ["place", "meeting", "nonsense"] {
                let r = try await client.call(.post, "/v1/beacons", token: ann, json: feature(extra: [("service", value)]))
                #expect(r.status == .unprocessableContent && r.errorPath == "properties.service", "\(r.text)")
            }
            #expect(try await client.call(.get, "/v1/beacons", token: ann).features.isEmpty, "nothing was stored")
            let meeting = try await client.call(.post, "/v1/meetings", token: ann, json: [
                "name": "M", "location": ["lat": 48.7784, "lon": 9.18], "start": "2026-11-21T11:00:00Z", "end": "2026-11-21T13:00:00Z",
            ])
            let id = try #require(meeting.json?["id"]?.stringValue)
            let change = try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: ["properties": ["service": "tour"]])
            #expect(change.status == .unprocessableContent && change.errorPath == "properties.service")
            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: ann,
                                          json: ["properties": ["service": "meeting", "name": "M2"]]).status == .ok,
                    "repeating the stored value in a patch is fine")
        }
    }
}

extension JSONValue {
    /// The Feature with a client-chosen `id`.
    func withID(_ id: String) -> JSONValue {
        guard case .object(var o) = self else { return self }
        o["id"] = .string(id)
        return .object(o)
    }
}
