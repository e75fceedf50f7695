import Foundation

/// Applies the schema's delete rules on top of a store's plain ``StoreWriter/delete(_:)``.
public enum DeleteRules {
    /// Deletes `id` and, following `.cascade` rules, what it owns. Throws
    /// ``StoreError/Kind/deleteDenied`` (and deletes nothing) when a `.deny` relationship still
    /// links an object. `.nullify` links are removed by the store.
    public static func delete(_ id: ObjectID, schema: Schema, in writer: any StoreWriter) throws {
        var visited = Set<ObjectID>()
        var order: [ObjectID] = []
        func collect(_ id: ObjectID) throws {
            guard visited.insert(id).inserted else { return }
            guard let entity = schema[id.entity] else {
                throw StoreError(.unknownEntity, entity: id.entity, "unknown entity '\(id.entity)'")
            }
            for relationship in entity.relationships where relationship.deleteRule != .nullify {
                let targets = try writer.related(relationship.name, of: id)
                switch relationship.deleteRule {
                case .deny where !targets.isEmpty:
                    throw StoreError(
                        .deleteDenied, entity: id.entity, member: relationship.name,
                        "cannot delete \(id): \(entity.name).\(relationship.name) still links \(targets.count) object(s) and its delete rule is deny")
                case .cascade:
                    for target in targets { try collect(target) }
                default:
                    break
                }
            }
            order.append(id)
        }
        try collect(id)
        for id in order where try writer.object(id) != nil {
            try writer.delete(id)
        }
    }

    /// Deletes `ids` and, following `.cascade` rules, what they own, reading each relationship's
    /// links once for all of them. Throws ``StoreError/Kind/deleteDenied`` (and deletes nothing)
    /// when a `.deny` relationship still links an object. Returns every object deleted, in the
    /// order deleted.
    @discardableResult
    public static func delete(_ ids: [ObjectID], schema: Schema, in writer: any StoreWriter) throws -> [ObjectID] {
        var visited = Set<ObjectID>()
        var order: [ObjectID] = []
        var level = ids.filter { visited.insert($0).inserted }
        while !level.isEmpty {
            order.append(contentsOf: level)
            var next: [ObjectID] = []
            for (entityName, group) in Dictionary(grouping: level, by: \.entity).sorted(by: { $0.key < $1.key }) {
                guard let entity = schema[entityName] else {
                    throw StoreError(.unknownEntity, entity: entityName, "unknown entity '\(entityName)'")
                }
                for relationship in entity.relationships where relationship.deleteRule != .nullify {
                    let links = try writer.related(relationship.name, of: group)
                    switch relationship.deleteRule {
                    case .deny:
                        if let (id, targets) = links.first(where: { !$0.value.isEmpty }) {
                            throw StoreError(
                                .deleteDenied, entity: entityName, member: relationship.name,
                                "cannot delete \(id): \(entityName).\(relationship.name) still links \(targets.count) object(s) and its delete rule is deny")
                        }
                    case .cascade:
                        for id in group { for target in links[id] ?? [] where visited.insert(target).inserted { next.append(target) } }
                    default:
                        break
                    }
                }
            }
            level = next
        }
        var deleted: [ObjectID] = []
        deleted.reserveCapacity(order.count)
        for id in order where try writer.object(id) != nil {
            try writer.delete(id)
            deleted.append(id)
        }
        return deleted
    }
}
