import DBeaconCore
import GRDB

extension SpatiaLiteStore {
    /// Initialises SpatiaLite's metadata (outside any transaction, as `InitSpatialMetaData(1)`
    /// requires) and then applies the append-only migrations of `schema/spatialite/`.
    static func migrate(_ writer: any DatabaseWriter) throws {
        try writer.writeWithoutTransaction { db in
            if try !db.tableExists("spatial_ref_sys") {
                try db.execute(sql: "SELECT InitSpatialMetaData(1)")
            }
        }
        var migrator = DatabaseMigrator()
        for (name, sql) in SpatiaLiteSchema.migrations {
            migrator.registerMigration(name) { db in
                try db.execute(sql: sql)
            }
        }
        try migrator.migrate(writer)
    }
}
