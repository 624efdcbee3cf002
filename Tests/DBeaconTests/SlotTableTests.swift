import DBeaconCore
import DBeaconIndex
import Testing

/// The index's id → slot table (open addressing, backward-shift deletion) against a dictionary,
/// through random installs and removals that fill it, empty it and fill it again, with ids made to
/// share their first 32 bytes (kept whole beside the words) among them.
@Suite(.bounded) struct SlotTableTests {
    @Test func agreesWithADictionaryThroughInstallsAndRemovals() {
        var g = SeededGenerator(seed: 46)
        var table = SlotTable()
        var model: [BeaconID: Int32] = [:]
        var free: [Int32] = []
        var nextSlot: Int32 = 0
        let pool = (0..<3_000).map { k in
            BeaconID(uncheckedRawValue: k % 5 == 0 ? "bcn_" + String(repeating: "x", count: 40) + "\(k)" : "bcn_\(k)")
        }
        for step in 0..<60_000 {
            let id = pool[Int(g.next() % UInt64(pool.count))]
            // Mostly installs in the first third, mostly removals in the second, mixed after.
            let install = step < 20_000 ? g.next() % 4 != 0 : step < 40_000 ? g.next() % 4 == 0 : g.next() % 2 == 0
            if install, model[id] == nil {
                let slot = free.popLast() ?? { defer { nextSlot += 1 }; return nextSlot }()
                table.set(id, slot: slot)
                model[id] = slot
            } else if !install, let slot = model[id] {
                table.remove(id)
                model[id] = nil
                free.append(slot)
            }
            if step % 997 == 0 {
                #expect(table.count == model.count)
                for probe in pool { #expect(table[probe] == model[probe], "\(probe) at step \(step)") }
                let batch = (0..<40).map { _ in pool[Int(g.next() % UInt64(pool.count))] }
                #expect(table.slots(of: batch) == batch.compactMap { model[$0] })
                #expect(Set(table.ids.compactMap { $0 }) == Set(model.keys))
            }
        }
        #expect(table.count == model.count && model.count > 0)
    }
}
