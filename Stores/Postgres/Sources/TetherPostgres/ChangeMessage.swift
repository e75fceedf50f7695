import Foundation
import Tether

/// A committed ``ChangeSet`` as the JSON a store sends other instances with `NOTIFY`: the
/// sending instance, and per entity the runs of row ids inserted, updated and deleted, with the
/// changed properties of updates.
struct ChangeMessage: Codable, Sendable {
    typealias Runs = [String: [[Int64]]]

    struct Update: Codable, Sendable {
        var properties: [String]
        var objects: Runs
    }

    /// The instance that committed.
    var origin: String
    var inserted: Runs
    var updated: Runs
    var deleted: Runs
    var updates: [Update]

    init(origin: String, _ changes: ChangeSet) {
        func runs(_ set: ObjectIDSet) -> Runs {
            Dictionary(uniqueKeysWithValues: set.entities.map { entity in
                (entity, set.rowIDRanges(of: entity).map { [$0.lowerBound, $0.upperBound] })
            })
        }
        self.origin = origin
        inserted = runs(changes.inserted)
        updated = runs(changes.updated)
        deleted = runs(changes.deleted)
        updates = changes.propertyUpdates.map { Update(properties: $0.properties.sorted(), objects: runs($0.objects)) }
    }

    /// The change set, or nil when a run is malformed or larger than `limit` objects in all.
    func changeSet(limit: Int = 10_000_000) -> ChangeSet? {
        var total = 0
        func ids(_ runs: Runs) -> [ObjectID]? {
            var result: [ObjectID] = []
            for (entity, list) in runs {
                for run in list {
                    guard run.count == 2, run[0] <= run[1] else { return nil }
                    total += Int(clamping: run[1] - run[0] + 1)
                    guard total <= limit else { return nil }
                    for row in run[0]...run[1] { result.append(ObjectID(entity: entity, rowID: row)) }
                }
            }
            return result
        }
        guard let inserted = ids(inserted), let updated = ids(updated), let deleted = ids(deleted) else { return nil }
        var changes = ChangeSet(inserted: ObjectIDSet(inserted), updated: ObjectIDSet(updated), deleted: ObjectIDSet(deleted))
        for update in updates {
            guard let objects = ids(update.objects) else { return nil }
            changes.recordUpdate(of: objects, properties: Set(update.properties))
        }
        return changes
    }
}
