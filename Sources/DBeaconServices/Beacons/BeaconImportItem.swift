package import DBeaconCore

/// One beacon of an import: what the file says, and where in the file it stands (the prefix
/// of its errors' paths, `features[3].`).
package struct BeaconImportItem: Sendable {
    package var draft: BeaconDraft
    package var path: String

    package init(draft: BeaconDraft, path: String) {
        self.draft = draft
        self.path = path
    }
}
