/// A perimeter whose GeoJSON an index keeps formatted (the regions of thousands of vertices
/// that dominate a nearby answer), so an answer copies the text instead of formatting every
/// coordinate again.
package protocol FormattedPerimeter: Sendable {
    /// Appends exactly what `GeoJSONCodec.writePerimeter(perimeter)` writes; returns false, with
    /// nothing appended, when the text cannot be read (the caller formats `perimeter` instead).
    func writeJSON(into w: inout JSONWriter) -> Bool
    /// The perimeter itself.
    var perimeter: Perimeter { get }
}
