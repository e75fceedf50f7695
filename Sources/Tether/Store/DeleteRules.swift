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
}
