import Foundation

extension Schema {
    /// The entities Tether keeps in a client's store beside the model's: the pending references
    /// (``PendingReferences``) and the outbox of local-first writes (``OutboxStorage``). They are
    /// not part of ``Client/schema``.
    static let tetherEntities = PendingReferences.entities + [OutboxStorage.entity, OutboxStorage.stateEntity]

    /// The schema a client prepares its store with: its own entities and Tether's.
    func addingTetherEntities() throws(SchemaError) -> Schema {
        for entity in Self.tetherEntities where self[entity.name] != nil {
            throw SchemaError(.duplicateName, entity: entity.name, member: nil, "'\(entity.name)' is the name of one of Tether's own entities")
        }
        return try Schema(entities + Self.tetherEntities)
    }
}

/// Where Tether's own entities name the model's entities in their values, for a store that
/// migrates the model's data: a step that renames or re-keys an entity must not leave them naming
/// what no longer exists.
package enum TetherBookkeeping {
    /// One of Tether's entities: its attributes that hold an entity name, and those that hold a
    /// key beginning with an entity name and U+001F.
    package struct Mentions: Sendable {
        /// The name of Tether's entity.
        package let entity: String
        /// Attributes whose value is an entity's name.
        package let names: [String]
        /// Attributes whose value begins with an entity's name and U+001F.
        package let keys: [String]
    }

    /// Tether's entities that name the model's entities: the outbox and the pending references.
    package static let mentions = [
        Mentions(entity: OutboxStorage.entityName, names: ["entity", "targetEntity"], keys: []),
        Mentions(entity: PendingReferences.targetEntityName, names: [], keys: ["key"]),
        Mentions(entity: PendingReferences.sourceEntityName, names: [], keys: ["key"]),
        Mentions(entity: PendingReferences.legacyEntityName, names: ["sourceEntity", "targetEntity"], keys: []),
    ]

    /// The stored remote record `data` (``StoreWriter/setRemoteRecord(_:of:)``) of an object of
    /// `entity` with its property `from` renamed `to`, or nil when the record does not name it:
    /// what the server last confirmed is kept by property name.
    package static func remoteRecord(_ data: Data, of entity: String, renaming from: String, to: String) throws -> Data? {
        var record = try RemoteRecord(data, of: ObjectID(entity: entity, rowID: 0))
        guard let confirmed = record.confirmed.removeValue(forKey: from) else { return nil }
        record.confirmed[to] = confirmed
        return record.data
    }
}
