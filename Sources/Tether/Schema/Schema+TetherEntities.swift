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
