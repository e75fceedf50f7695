public import Tether

/// A mapping that declares one entity of the schema, whatever its model type: lets
/// ``Tether/Schema/init(mappings:entities:)`` and ``Tether/Client/Builder/init(models:entities:)`` take
/// mappings of different models in one array.
public protocol ModelMapping: Sendable {
    /// The entity name.
    var entityName: String { get }
    /// The schema entity the mapping declares.
    func entity() throws(KeyPathMappingError) -> Entity
    /// The JSON keys of the mapping as a core key mapping.
    var keyOverrides: KeyOverrides { get }
}

extension KeyPathMapping: ModelMapping {}

extension Schema {
    /// The schema of typed models, derived from their mappings, plus any hand-declared `entities`.
    ///
    /// An inverse declared on one side of a relationship is filled in on the other side.
    /// Throws a ``KeyPathMappingError`` for a mapping that cannot become an entity, and a
    /// `SchemaError` when the entities are not consistent (a relationship to a model
    /// whose mapping is not listed, say).
    public init(mappings: [any ModelMapping], entities: [Entity] = []) throws {
        var derived: [Entity] = []
        var seen = Set(entities.map(\.name))
        for mapping in mappings {
            guard seen.insert(mapping.entityName).inserted else {
                throw KeyPathMappingError(
                    .duplicateEntity, entity: mapping.entityName, member: nil,
                    "entity '\(mapping.entityName)' is declared by two mappings (or by a mapping and an entity)")
            }
            derived.append(try mapping.entity())
        }
        var all = derived + entities
        // Fill in inverses declared on one side only.
        for entity in all {
            for relationship in entity.relationships {
                guard let inverse = relationship.inverse,
                    let destination = all.firstIndex(where: { $0.name == relationship.destination }),
                    let back = all[destination].relationships.firstIndex(where: { $0.name == inverse }),
                    all[destination].relationships[back].inverse == nil,
                    all[destination].relationships[back].destination == entity.name
                else { continue }
                all[destination].relationships[back].inverse = relationship.name
            }
        }
        try self.init(all)
    }
}

extension Client.Builder {
    /// A builder for typed models: the schema is derived from the mappings (plus any
    /// hand-declared `entities`), and each mapping's JSON keys are added as a key mapping.
    ///
    /// ```swift
    /// let client = try Client.Builder(models: [userMapping, repositoryMapping]).build()
    /// ```
    public init(models: [any ModelMapping], entities: [Entity] = []) throws {
        self.init(schema: try Schema(mappings: models, entities: entities))
        self = self.models(models)
    }

    /// Adds the JSON keys of typed-model mappings as key mappings. Use it when the schema was
    /// built separately with ``Tether/Schema/init(mappings:entities:)``.
    public func models(_ models: [any ModelMapping]) -> Self {
        models.reduce(self) { $0.keyMapping($1.keyOverrides) }
    }
}
