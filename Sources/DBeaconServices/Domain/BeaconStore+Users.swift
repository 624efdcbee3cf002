package import DBeaconCore
package import DBeaconStore

extension BeaconStore {
    /// Throws 422 `unknown_user` naming the first id that is not a user.
    package func checkUsersExist(_ users: [UserID], path: String) async throws {
        for (i, u) in users.enumerated() where try await user(id: u) == nil {
            throw DBeaconError.invalid("\(path)[\(i)]", "user \(u) does not exist", code: "unknown_user")
        }
    }
}
