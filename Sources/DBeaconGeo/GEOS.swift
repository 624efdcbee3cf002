import CGEOS
package import DBeaconCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A GEOS context handle owned by one thread.
///
/// GEOS's reentrant API wants one handle per thread (the handle carries the error buffer);
/// `GEOSContext.current` gives each thread its own, created on first use and released when
/// the thread exits. Geometries themselves are not tied to a handle, so a prepared geometry
/// built on one thread may be queried from another through that thread's handle.
package final class GEOSContext {
    let handle: GEOSContextHandle_t
    fileprivate(set) var lastError: String?

    private init() {
        handle = GEOS_init_r()
        GEOSContext_setErrorMessageHandler_r(handle, { message, userdata in
            guard let userdata, let message else { return }
            let context = Unmanaged<GEOSContext>.fromOpaque(userdata).takeUnretainedValue()
            context.lastError = String(cString: message)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        GEOS_finish_r(handle)
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
            Unmanaged<GEOSContext>.fromOpaque(pointer).release()
            #else
            if let pointer { Unmanaged<GEOSContext>.fromOpaque(pointer).release() }
            #endif
        }
        return key
    }()

    /// This thread's context.
    package static var current: GEOSContext {
        if let existing = pthread_getspecific(key) {
            return Unmanaged<GEOSContext>.fromOpaque(existing).takeUnretainedValue()
        }
        let context = GEOSContext()
        pthread_setspecific(key, Unmanaged.passRetained(context).toOpaque())
        return context
    }

    /// GEOS's version string, e.g. "3.11.1-CAPI-1.17.1".
    package static var version: String { String(cString: GEOSversion()) }

    // MARK: Building geometries

    /// Builds a GEOS (Multi)Polygon; the caller owns the result.
    func makeGeometry(_ polygons: [Polygon], multi: Bool) -> OpaquePointer? {
        var parts: [OpaquePointer?] = []
        parts.reserveCapacity(polygons.count)
        for polygon in polygons {
            guard let p = makePolygon(polygon) else {
                for part in parts { GEOSGeom_destroy_r(handle, part) }
                return nil
            }
            parts.append(p)
        }
        if !multi, parts.count == 1 { return parts[0] }
        return parts.withUnsafeMutableBufferPointer { buffer in
            GEOSGeom_createCollection_r(handle, Int32(GEOS_MULTIPOLYGON.rawValue), buffer.baseAddress, UInt32(buffer.count))
        }
    }

    private func makeRing(_ ring: Ring) -> OpaquePointer? {
        var flat = [Double]()
        flat.reserveCapacity(ring.count * 2)
        for p in ring {
            flat.append(p.lon)
            flat.append(p.lat)
        }
        guard let seq = flat.withUnsafeBufferPointer({
            GEOSCoordSeq_copyFromBuffer_r(handle, $0.baseAddress, UInt32(ring.count), 0, 0)
        }) else { return nil }
        return GEOSGeom_createLinearRing_r(handle, seq)
    }

    private func makePolygon(_ polygon: Polygon) -> OpaquePointer? {
        guard let shell = makeRing(polygon.exterior) else { return nil }
        var holes: [OpaquePointer?] = []
        for ring in polygon.holes {
            guard let h = makeRing(ring) else {
                GEOSGeom_destroy_r(handle, shell)
                for hole in holes { GEOSGeom_destroy_r(handle, hole) }
                return nil
            }
            holes.append(h)
        }
        return holes.withUnsafeMutableBufferPointer {
            GEOSGeom_createPolygon_r(handle, shell, $0.baseAddress, UInt32($0.count))
        }
    }

    // MARK: Operations

    /// Nil when valid; otherwise GEOS's reason ("Self-intersection") and where it is.
    package func invalidityReason(_ polygons: [Polygon]) -> (reason: String, location: Position?)? {
        guard let geom = makeGeometry(polygons, multi: polygons.count > 1) else {
            return (lastError ?? "GEOS could not build the geometry", nil)
        }
        defer { GEOSGeom_destroy_r(handle, geom) }
        var reason: UnsafeMutablePointer<CChar>?
        var location: OpaquePointer?
        let result = GEOSisValidDetail_r(handle, geom, 0, &reason, &location)
        defer {
            if let reason { GEOSFree_r(handle, reason) }
            if let location { GEOSGeom_destroy_r(handle, location) }
        }
        if result == 1 { return nil }
        let text = reason.map { String(cString: $0) } ?? lastError ?? "invalid geometry"
        var position: Position?
        if let location {
            var x = 0.0, y = 0.0
            if GEOSGeomGetX_r(handle, location, &x) == 1, GEOSGeomGetY_r(handle, location, &y) == 1 {
                position = Position(lon: x, lat: y)
            }
        }
        return (text, position)
    }

    /// A point guaranteed to lie inside the polygons (GEOS PointOnSurface).
    package func pointOnSurface(_ polygons: [Polygon]) -> Position? {
        guard let geom = makeGeometry(polygons, multi: polygons.count > 1) else { return nil }
        defer { GEOSGeom_destroy_r(handle, geom) }
        guard let point = GEOSPointOnSurface_r(handle, geom) else { return nil }
        defer { GEOSGeom_destroy_r(handle, point) }
        var x = 0.0, y = 0.0
        guard GEOSGeomGetX_r(handle, point, &x) == 1, GEOSGeomGetY_r(handle, point, &y) == 1 else { return nil }
        return Position(lon: x, lat: y)
    }

    /// A point geometry for repeated predicate calls; destroy it with `destroy(_:)`.
    func makePoint(_ p: Position) -> OpaquePointer? {
        GEOSGeom_createPointFromXY_r(handle, p.lon, p.lat)
    }

    func destroy(_ geometry: OpaquePointer?) {
        if let geometry { GEOSGeom_destroy_r(handle, geometry) }
    }
}

/// A polygonal perimeter prepared for fast repeated point tests (GEOS prepared geometry).
///
/// Prepared geometries build their edge index lazily on the first predicate; `init` runs one
/// predicate so the index exists before the object is shared between threads.
package final class PreparedPerimeter: @unchecked Sendable {
    private let geometry: OpaquePointer
    private let prepared: OpaquePointer

    package init?(_ polygons: [Polygon]) {
        let context = GEOSContext.current
        guard !polygons.isEmpty, let geometry = context.makeGeometry(polygons, multi: polygons.count > 1) else { return nil }
        guard let prepared = GEOSPrepare_r(context.handle, geometry) else {
            GEOSGeom_destroy_r(context.handle, geometry)
            return nil
        }
        self.geometry = geometry
        self.prepared = prepared
        // Warm the lazy index before the object can be shared.
        if let p = context.makePoint(polygons[0].exterior[0]) {
            _ = GEOSPreparedCovers_r(context.handle, prepared, p)
            context.destroy(p)
        }
    }

    deinit {
        let context = GEOSContext.current
        GEOSPreparedGeom_destroy_r(context.handle, prepared)
        GEOSGeom_destroy_r(context.handle, geometry)
    }

    /// True when the perimeter covers the point (boundary included).
    package func covers(_ point: Position) -> Bool {
        let context = GEOSContext.current
        guard let p = context.makePoint(point) else { return false }
        defer { context.destroy(p) }
        return GEOSPreparedCovers_r(context.handle, prepared, p) == 1
    }

    /// Covers test with a point geometry made once per query (see `PointProbe`).
    package func covers(_ probe: borrowing PointProbe) -> Bool {
        GEOSPreparedCovers_r(probe.context.handle, prepared, probe.geometry) == 1
    }
}

/// A GEOS point built once and tested against many prepared perimeters on this thread.
package struct PointProbe: ~Copyable {
    let context: GEOSContext
    let geometry: OpaquePointer

    package init?(_ point: Position) {
        context = GEOSContext.current
        guard let g = context.makePoint(point) else { return nil }
        geometry = g
    }

    deinit { context.destroy(geometry) }
}
