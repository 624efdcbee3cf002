package import DBeaconCore

/// A beacon's fields other than its id, location and perimeter, in a compact byte form: the
/// index keeps every beacon this way (the perimeter it keeps as its exact test does), so an
/// answer is rebuilt from memory without a read of the store and without a `Beacon` object per
/// beacon held (about 80 bytes for a beacon with a name, an owner and two tags, where a
/// `Beacon` with its strings and arrays takes several hundred).
///
/// Integers are LEB128 varints (signed ones zigzag-coded), strings a varint length and UTF-8.
package enum BeaconRecord {
    private enum Flag {
        static let tracksOwner: UInt8 = 1, description: UInt8 = 2, lifetime: UInt8 = 4, start: UInt8 = 8
        static let end: UInt8 = 16, members: UInt8 = 32, service: UInt8 = 64
    }

    /// Appends the record of `b` to `out`.
    package static func encode(_ b: Beacon, into out: inout [UInt8]) {
        var w = Writer(out: out)
        out = []
        // Room for the whole record at once (appending byte by byte regrew it three or four
        // times: 15 % of a load's allocations).
        w.out.reserveCapacity(w.out.count + estimatedSize(b))
        w.uint(UInt64(b.version))
        w.uint(UInt64(b.followersCount))
        w.int(b.createdAt.millis)
        w.int(b.updatedAt.millis)
        var flags: UInt8 = 0
        if b.tracksOwner { flags |= Flag.tracksOwner }
        if b.description != nil { flags |= Flag.description }
        if let l = b.lifetime {
            flags |= Flag.lifetime
            if l.start != nil { flags |= Flag.start }
            if l.end != nil { flags |= Flag.end }
        }
        if b.members != nil { flags |= Flag.members }
        if b.service != nil { flags |= Flag.service }
        w.out.append(flags)
        w.string(b.contentPolicy.rawValue) // by name: records outlive a binary in snapshots
        w.string(b.name)
        if let d = b.description { w.string(d) }
        w.string(b.owner.rawValue)
        if let s = b.lifetime?.start { w.int(s.millis) }
        if let e = b.lifetime?.end { w.int(e.millis) }
        if let members = b.members {
            w.uint(UInt64(members.count))
            for m in members { w.string(m.rawValue) }
        }
        w.uint(UInt64(b.tags.count))
        for t in b.tags { w.string(t) }
        if let s = b.service { w.string(s) }
        w.uint(UInt64(b.relationships.count))
        for r in b.relationships {
            w.string(r.type)
            w.string(r.target.rawValue)
            if let o = r.order {
                w.out.append(1)
                w.int(Int64(o))
            } else {
                w.out.append(0)
            }
        }
        w.uint(UInt64(b.content.count))
        for c in b.content {
            w.string(c.kind)
            w.string(c.url)
            w.out.append((c.title != nil ? 1 : 0) | (c.addedBy != nil ? 2 : 0) | (c.createdAt != nil ? 4 : 0))
            if let t = c.title { w.string(t) }
            if let a = c.addedBy { w.string(a.rawValue) }
            if let t = c.createdAt { w.int(t.millis) }
        }
        out = w.out
    }

    /// At least the bytes `encode` writes for `b` (varints at their widest).
    static func estimatedSize(_ b: Beacon) -> Int {
        // Each string is its UTF-8 plus a length of up to 10 bytes (O(1) for native strings).
        func s(_ string: String) -> Int { string.utf8.count + 10 }
        var n = 4 * 10 + 1 + s(b.contentPolicy.rawValue) + s(b.name) + s(b.owner.rawValue) + 2 * 10 + 3 * 10
        if let d = b.description { n += s(d) }
        if let members = b.members { n += members.reduce(0) { $0 + s($1.rawValue) } }
        n += b.tags.reduce(0) { $0 + s($1) }
        if let service = b.service { n += s(service) }
        n += b.relationships.reduce(0) { $0 + s($1.type) + s($1.target.rawValue) + 11 }
        n += b.content.reduce(0) { n, c in
            n + s(c.kind) + s(c.url) + 1 + (c.title.map(s) ?? 0) + (c.addedBy.map { s($0.rawValue) } ?? 0) + 10
        }
        return n
    }

    /// The beacon a record was made of, with its id, location and perimeter.
    package static func decode(_ bytes: UnsafeRawBufferPointer, id: BeaconID, location: Position, perimeter: Perimeter) -> Beacon {
        var r = Reader(bytes: bytes)
        let version = Int(r.uint())
        let followers = Int(r.uint())
        let created = Timestamp(millis: r.int())
        let updated = Timestamp(millis: r.int())
        let flags = r.byte()
        let policy = ContentPolicy(rawValue: r.string()) ?? .owner
        let name = r.string()
        let description = flags & Flag.description != 0 ? r.string() : nil
        let owner = UserID(uncheckedRawValue: r.string())
        let lifetime = r.lifetime(flags), members = r.members(flags)
        let tags = (0..<Int(r.uint())).map { _ in r.string() }
        let service = flags & Flag.service != 0 ? r.string() : nil
        let relationships = (0..<Int(r.uint())).map { _ in
            let type = r.string(), target = BeaconID(uncheckedRawValue: r.string())
            let order = r.byte() == 1 ? Int(r.int()) : nil
            return Relationship(type: type, target: target, order: order)
        }
        let content = (0..<Int(r.uint())).map { _ in
            let kind = r.string(), url = r.string(), f = r.byte()
            let title = f & 1 != 0 ? r.string() : nil
            let addedBy = f & 2 != 0 ? UserID(uncheckedRawValue: r.string()) : nil
            let createdAt = f & 4 != 0 ? Timestamp(millis: r.int()) : nil
            return ContentRef(kind: kind, url: url, title: title, addedBy: addedBy, createdAt: createdAt)
        }
        return Beacon(id: id, name: name, description: description, owner: owner, location: location, perimeter: perimeter,
                      lifetime: lifetime, members: members, tags: tags, relationships: relationships, content: content,
                      tracksOwner: flags & Flag.tracksOwner != 0, contentPolicy: policy, service: service,
                      followersCount: followers, version: version, createdAt: created, updatedAt: updated)
    }

    /// What the visibility rule reads of a record (`Beacon.visibilitySubject`), its version and
    /// whether it moves with its owner, without decoding the rest (`BeaconFacts`).
    package static func decodeFacts(_ bytes: UnsafeRawBufferPointer) -> BeaconFacts {
        var r = Reader(bytes: bytes)
        let version = Int(r.uint())
        _ = r.uint() // followers
        for _ in 0..<2 { _ = r.int() } // created, updated
        let flags = r.byte()
        r.skipString() // content policy
        r.skipString() // name
        if flags & Flag.description != 0 { r.skipString() }
        let owner = UserID(uncheckedRawValue: r.string())
        let lifetime = r.lifetime(flags), members = r.members(flags)
        for _ in 0..<Int(r.uint()) { r.skipString() } // tags
        let service = flags & Flag.service != 0 ? r.string() : nil
        return BeaconFacts(subject: VisibilityPolicy.Subject(owner: owner, members: members, lifetime: lifetime, service: service),
                           version: version, tracksOwner: flags & Flag.tracksOwner != 0)
    }

    private struct Writer {
        var out: [UInt8]

        mutating func uint(_ v: UInt64) {
            var v = v
            while v >= 0x80 {
                out.append(UInt8(v & 0x7F) | 0x80)
                v >>= 7
            }
            out.append(UInt8(v))
        }

        mutating func int(_ v: Int64) { uint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }

        mutating func string(_ s: String) {
            var s = s
            s.withUTF8 { bytes in
                uint(UInt64(bytes.count))
                out.append(contentsOf: bytes)
            }
        }
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var i = 0

        mutating func byte() -> UInt8 {
            defer { i += 1 }
            return bytes[i]
        }

        mutating func uint() -> UInt64 {
            var v: UInt64 = 0, shift: UInt64 = 0
            while true {
                let b = byte()
                v |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return v }
                shift += 7
            }
        }

        mutating func int() -> Int64 {
            let u = uint()
            return Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1)
        }

        /// The lifetime, when `flags` say the record has one.
        mutating func lifetime(_ flags: UInt8) -> Lifetime? {
            guard flags & Flag.lifetime != 0 else { return nil }
            let start = flags & Flag.start != 0 ? Timestamp(millis: int()) : nil
            let end = flags & Flag.end != 0 ? Timestamp(millis: int()) : nil
            return Lifetime(start: start, end: end)
        }

        /// The visibility group, when `flags` say the record has one.
        mutating func members(_ flags: UInt8) -> [UserID]? {
            guard flags & Flag.members != 0 else { return nil }
            return (0..<Int(uint())).map { _ in UserID(uncheckedRawValue: string()) }
        }

        mutating func skipString() {
            i += Int(uint())
        }

        mutating func string() -> String {
            let n = Int(uint())
            defer { i += n }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]), as: UTF8.self)
        }
    }
}
