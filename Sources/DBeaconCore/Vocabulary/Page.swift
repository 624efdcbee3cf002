/// A page of results and where the next one starts (nil at the end).
package struct Page<Item: Sendable>: Sendable {
    package var items: [Item]
    package var next: Int64?

    package init(items: [Item], next: Int64?) {
        self.items = items
        self.next = next
    }
}
