/// A perimeter whose GeoJSON an index keeps formatted (the regions of thousands of vertices
/// that dominate a nearby answer), so an answer copies the text instead of formatting every
/// coordinate again.
package protocol FormattedPerimeter: Sendable {
    /// Bytes of the GeoJSON: exactly what `GeoJSONCodec.writePerimeter(perimeter)` writes.
    var jsonByteCount: Int { get }
    /// Writes the GeoJSON at `out` (`jsonByteCount` bytes); false when the text cannot be read
    /// (the caller formats `perimeter` instead).
    func writeJSON(to out: UnsafeMutableRawBufferPointer) -> Bool
    /// The perimeter itself.
    var perimeter: Perimeter { get }
}
