import DBeaconCore
import DBeaconServices
import Testing

/// A user's fence states are a sorted array (`UserStates`): lookups, inserts and removals must
/// behave as a dictionary would, and `uncovered` must split covering ids exactly as sets do,
/// with up to 64 states (a bit mask) and beyond (an array of marks).
@Suite(.bounded) struct UserStatesTests {
    @Test(arguments: [5, 64, 65, 150])
    func matchesADictionary(size: Int) {
        var rng = SystemRandomNumberGenerator()
        let pool = (0..<(2 * size)).map { _ in BeaconID.generate() }
        let t = Timestamp(millis: 1_795_000_000_000)
        var states = UserStates()
        var model: [BeaconID: FenceState] = [:]
        for step in 0..<4_000 {
            let id = pool.randomElement(using: &rng)!
            if Int.random(in: 0..<3, using: &rng) == 0 {
                states[id] = nil
                model[id] = nil
            } else if model.count < size || model[id] != nil {
                let s = FenceState(beacon: id, enteredAt: t.adding(seconds: Double(step)), dwelled: Bool.random(using: &rng))
                states[id] = s
                model[id] = s
            }
            #expect(states[id] == model[id])
            if step % 97 == 0 {
                #expect(states.states.map(\.beacon) == model.keys.sorted())
                #expect(states.states.allSatisfy { model[$0.beacon] == $0 })
                #expect(states.isEmpty == model.isEmpty)
                // A covering list: some ids inside, some not, in any order.
                let covering = pool.filter { _ in Bool.random(using: &rng) }.shuffled(using: &rng)
                var outside: [BeaconID] = []
                let uncovered = states.uncovered(by: covering) { outside.append($0) }
                #expect(outside == covering.filter { model[$0] == nil })
                let expected = model.keys.filter { !covering.contains($0) }.sorted()
                #expect(uncovered.map { states.states[$0].beacon } == expected)
            }
        }
    }
}
