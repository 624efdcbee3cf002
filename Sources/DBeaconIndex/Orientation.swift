import DBeaconCore

/// GEOS's `Orientation::index` (`CGAlgorithmsDD::orientationIndex`): the side of `q` relative
/// to the directed line p1→p2 (1 left, −1 right, 0 collinear), with a floating-point filter
/// and a double-double fallback near zero.
package enum Orientation {
    @inline(__always)
    package static func index(_ p1x: Double, _ p1y: Double, _ p2x: Double, _ p2y: Double, _ qx: Double, _ qy: Double) -> Int {
        let filtered = filter(p1x, p1y, p2x, p2y, qx, qy)
        if filtered <= 1 { return filtered }
        let dx1 = DD(p2x) + DD(-p1x)
        let dy1 = DD(p2y) + DD(-p1y)
        let dx2 = DD(qx) + DD(-p2x)
        let dy2 = DD(qy) + DD(-p2y)
        return (dx1 * dy2 - dy1 * dx2).signum
    }

    @inline(__always)
    static func sign(_ x: Double) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }

    /// `orientationIndexFilter`: the sign when it is certain, 2 otherwise.
    @inline(__always)
    static func filter(_ pax: Double, _ pay: Double, _ pbx: Double, _ pby: Double, _ pcx: Double, _ pcy: Double) -> Int {
        let detleft = (pax - pcx) * (pby - pcy)
        let detright = (pay - pcy) * (pbx - pcx)
        let det = detleft - detright
        let detsum: Double
        if detleft > 0 {
            if detright <= 0 { return sign(det) }
            detsum = detleft + detright
        } else if detleft < 0 {
            if detright >= 0 { return sign(det) }
            detsum = -detleft - detright
        } else {
            return sign(det)
        }
        let errbound = 1e-15 * detsum
        if det >= errbound || -det >= errbound { return sign(det) }
        return 2
    }

    /// GEOS's double-double number (`geos::math::DD`), with the operations the predicate uses.
    struct DD {
        var hi: Double
        var lo: Double

        init(_ x: Double) { hi = x; lo = 0 }
        init(_ hi: Double, _ lo: Double) { self.hi = hi; self.lo = lo }

        static func + (x: DD, y: DD) -> DD {
            let S = x.hi + y.hi
            let T = x.lo + y.lo
            var e = S - x.hi
            let f = T - x.lo
            var s = S - e
            var t = T - f
            s = (y.hi - e) + (x.hi - s)
            t = (y.lo - f) + (x.lo - t)
            e = s + T
            let H = S + e
            let h = e + (S - H)
            e = t + h
            let zhi = H + e
            return DD(zhi, e + (H - zhi))
        }

        static func - (x: DD, y: DD) -> DD { x + DD(-y.hi, -y.lo) }

        static func * (x: DD, y: DD) -> DD {
            let split = 134_217_729.0
            var C = split * x.hi
            var hx = C - x.hi
            var c = split * y.hi
            hx = C - hx
            let tx = x.hi - hx
            var hy = c - y.hi
            C = x.hi * y.hi
            hy = c - hy
            let ty = y.hi - hy
            c = ((((hx * hy - C) + hx * ty) + tx * hy) + tx * ty) + (x.hi * y.lo + x.lo * y.hi)
            let zhi = C + c
            hx = C - zhi
            return DD(zhi, c + hx)
        }

        var signum: Int {
            if hi > 0 { return 1 }
            if hi < 0 { return -1 }
            if lo > 0 { return 1 }
            if lo < 0 { return -1 }
            return 0
        }
    }
}
