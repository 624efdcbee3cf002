import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Foundation
import Testing

/// The typed wire models (issue 44): what they write is what the clients and earlier
/// versions read.
@Suite struct WireModelTests {
    /// A phone state as the version before the typed model wrote it (numbers as doubles, the
    /// waypoints as triples) is read back whole, and what is written now reads back equal.
    @Test func phoneStatesOfEarlierVersionsStillRead() throws {
        let old = #"{"signature":"bcn_a@48.7,9.1,200","lat":48.7784,"lon":9.18,"radius_m":2999.5,"# +
            #""waypoints":[[1733916125,"bcn_a","open meeting"],[1368957396,"refresh","DBeacon: regions nearby"]],"events":42}"#
        let state = try PhoneState(decoding: old)
        #expect(state.signature == "bcn_a@48.7,9.1,200")
        #expect(state.refreshCenter == Position(lon: 9.18, lat: 48.7784) && state.refreshRadius == 2999.5)
        #expect(state.region(wtst: 1733916125) == "bcn_a" && state.region(desc: "DBeacon: regions nearby") == "refresh")
        #expect(state.events == 42)
        #expect(try PhoneState(decoding: state.encoded()) == state)
        var fresh = PhoneState.initial
        fresh.events = nil
        #expect(try PhoneState(decoding: fresh.encoded()) == fresh)
        #expect(throws: (any Error).self) { try PhoneState(decoding: #"{"lat":1}"#) }
    }

    /// The OwnTracks answer: the same answer is the same bytes, each message starts with its
    /// `_type`, absent iBeacon fields are left out and slashes are not escaped.
    @Test func ownTracksAnswersAreStableAndTyped() throws {
        var answer = PhoneAnswer()
        answer.waypoints = [
            PhoneWaypoint(rid: "bcn_a", desc: "Café", center: Position(lon: 9.18, lat: 48.7784), radiusM: 200, wtst: 7),
            PhoneWaypoint(rid: "reg_b", desc: "Hall: east", center: Position(lon: 9.18, lat: 48.7784), radiusM: 0, wtst: 8,
                          iBeacon: ("F7826DA6-4FA2-4E98-8024-BC5B71E0893E", 1, nil)),
        ]
        answer.friends = [PhoneFriend(user: UserID(uncheckedRawValue: "usr_ann"), name: "Ann",
                                      location: UserLocation(user: UserID(uncheckedRawValue: "usr_ann"), position: Position(lon: 9.1, lat: 48.7),
                                                             accuracyM: 12.4, fixAt: Timestamp(millis: 1_795_262_400_000),
                                                             receivedAt: Timestamp(millis: 1_795_262_400_000)))]
        let bytes = OwnTracksAnswer.encode(answer)
        #expect(OwnTracksAnswer.encode(answer) == bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        let messages = try #require(try JSONParser.parse(bytes).arrayValue)
        #expect(messages.count == 4)
        #expect(messages.map { $0["_type"]?.stringValue } == ["cmd", "cmd", "card", "location"])
        for m in messages { #expect(m.objectValue?.keys.first == "_type", "\(m)") }
        let waypoints = messages[1]["waypoints"]?["waypoints"]?.arrayValue ?? []
        #expect(waypoints.first?["uuid"] == nil && waypoints.first?["major"] == nil)
        #expect(waypoints.last?["desc"] == "Hall  east:F7826DA6-4FA2-4E98-8024-BC5B71E0893E:1" && waypoints.last?["minor"] == nil)
        #expect(messages[3]["acc"] == 12 && messages[3]["tst"] == 1_795_262_400 && messages[3]["topic"] == "owntracks/usr_ann/dbeacon")
        #expect(!text.contains("\\/"))
    }

    /// What `JSONEncoder` writes for a value with sorted keys and unescaped slashes: the bytes
    /// the house writers of the phone state and the OwnTracks answer must equal.
    static func foundation(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The OwnTracks answer's house writer writes what `JSONEncoder` writes for its messages,
    /// for random answers with every kind of message: waypoints with and without iBeacon
    /// fields, friends, transitions, names with quotes, slashes, control characters and
    /// non-ASCII letters, coordinates of every size.
    @Test func ownTracksAnswersAreFoundationsBytes() throws {
        var g = SystemRandomNumberGenerator()
        let names = ["Ann", "Café \"Zur Post\"", "a/b\\c", "tab\there", "新宿", "", "x:y", "line\nbreak \u{1}"]
        func position() -> Position {
            Position(lon: [Double.random(in: -180...180, using: &g), 9.18, -0.000_012_5, 1e-7].randomElement(using: &g)!,
                     lat: [Double.random(in: -90...90, using: &g), 48.7784, 0, -45.5].randomElement(using: &g)!)
        }
        for _ in 0..<300 {
            var answer = PhoneAnswer()
            if Bool.random(using: &g) {
                answer.waypoints = (0..<Int.random(in: 0...20, using: &g)).map { i in
                    PhoneWaypoint(rid: "bcn_\(i)", desc: names.randomElement(using: &g)!, center: position(),
                                  radiusM: .random(in: 0...30_000, using: &g), wtst: .random(in: 0...2_000_000_000, using: &g),
                                  iBeacon: Bool.random(using: &g) ? nil : ("F7826DA6-4FA2-4E98-8024-BC5B71E0893E",
                                                                           Bool.random(using: &g) ? nil : .random(in: 0...65_535, using: &g),
                                                                           Bool.random(using: &g) ? nil : .random(in: 0...65_535, using: &g)))
                }
            }
            let t = Timestamp(millis: .random(in: 0...2_000_000_000_000, using: &g))
            answer.friends = (0..<Int.random(in: 0...4, using: &g)).map { i in
                let user = UserID(uncheckedRawValue: "usr_\(i)")
                return PhoneFriend(user: user, name: names.randomElement(using: &g)!,
                                   location: UserLocation(user: user, position: position(), accuracyM: .random(in: 0...500, using: &g), fixAt: t, receivedAt: t))
            }
            answer.notices = (0..<Int.random(in: 0...3, using: &g)).map { i in
                PhoneNotice(member: UserID(uncheckedRawValue: "usr_\(Int.random(in: 0...5, using: &g))"), group: names.randomElement(using: &g)!,
                            groupID: "bcn_g\(i)", entered: Bool.random(using: &g), at: t, memberName: names.randomElement(using: &g),
                            groupLocation: Bool.random(using: &g) ? position() : nil)
            }
            let house = String(decoding: OwnTracksAnswer.encode(answer), as: UTF8.self)
            #expect(house == (try Self.foundation(OwnTracksAnswer.messages(answer))), "\(answer)")
        }
    }

    /// The house decoder reads what Foundation's reads, the same way, for states of every shape,
    /// and refuses what Foundation refuses (a fraction for an integer, a missing key, a string
    /// for a number).
    @Test func theHouseDecoderAgreesWithFoundation() throws {
        var g = SystemRandomNumberGenerator()
        for i in 0..<300 {
            var state = PhoneState(signature: "s\(i)", refreshCenter: Position(lon: .random(in: -180...180, using: &g), lat: .random(in: -90...90, using: &g)),
                                   refreshRadius: .random(in: -1...30_000, using: &g),
                                   waypoints: (0..<Int.random(in: 0...20, using: &g)).map {
                                       PhoneState.Waypoint(wtst: .random(in: 0...2_000_000_000, using: &g), rid: "bcn_\($0)", desc: "d \($0) \"é\"")
                                   },
                                   events: Bool.random(using: &g) ? nil : .random(in: 0...(1 << 50), using: &g))
            if Bool.random(using: &g) {
                state.checkedAt = .random(in: 0...(1 << 45), using: &g)
                state.stamp = .random(in: 0...(1 << 50), using: &g)
                state.versions = Dictionary(uniqueKeysWithValues: state.waypoints.map { (BeaconID(uncheckedRawValue: $0.rid), Int.random(in: 1...99, using: &g)) })
            }
            let text = state.encoded()
            #expect(text == (try Self.foundation(state)), "the house writer writes Foundation's bytes")
            let foundation = try JSONDecoder().decode(PhoneState.self, from: Data(text.utf8))
            #expect(try PhoneState(decoding: text) == foundation)
            #expect(foundation == state)
        }
        for bad in [#"{"signature":"s","lat":1,"lon":2,"radius_m":3,"waypoints":[[1,2,"d"]]}"#,
                    #"{"signature":"s","lat":1,"lon":2,"waypoints":[]}"#,
                    #"{"signature":"s","lat":"1","lon":2,"radius_m":3}"#,
                    #"{"signature":"s","lat":1,"lon":2,"radius_m":3,"checked_at":-1.25}"#] {
            #expect(throws: (any Error).self, "\(bad)") { try PhoneState(decoding: bad) }
            #expect(throws: (any Error).self, "\(bad)") { try JSONDecoder().decode(PhoneState.self, from: Data(bad.utf8)) }
        }
    }
}
