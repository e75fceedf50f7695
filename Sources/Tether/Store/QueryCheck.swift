/// The checks every store makes of a query before answering it, with the same errors: each name
/// it uses is an attribute of the entity or a path through to-one relationships to one
/// (``AttributePaths``), and no sort key orders by an array, a map or a JSON value (no order of
/// them means anything, and two stores would not agree on one).
public enum QueryCheck {
    /// The names `query` uses, resolved, by name; `entities` gives an entity of the schema by name.
    /// Throws as ``AttributePaths/resolve(_:in:entity:)`` does, and ``StoreError/Kind/unsupported``
    /// for a sort by a collection attribute.
    public static func check(_ query: Query, entities: (String) -> Entity?) throws -> [String: AttributePath] {
        guard let entity = entities(query.entity) else {
            throw StoreError(.unknownEntity, entity: query.entity, "unknown entity '\(query.entity)'")
        }
        var paths = try query.condition.map { try check($0, of: entity, entities: entities) } ?? [:]
        func resolve(_ name: String) throws -> AttributePath {
            if let known = paths[name] { return known }
            let path = try AttributePaths.resolve(name, in: entities, entity: entity)
            paths[name] = path
            return path
        }
        for key in query.sort {
            let path = try resolve(key.attribute)
            if path.type.isCollection {
                throw StoreError(
                    .unsupported, entity: query.entity, member: key.attribute,
                    "\(query.entity).\(key.attribute) is \(path.type); a query cannot sort by an array, a map or a JSON value")
            }
        }
        return paths
    }

    /// The names `condition` uses on `entity`, resolved, by name; its ``Condition/any(_:_:)`` and
    /// ``Condition/all(_:_:)`` are checked too, each condition on its relationship's destination
    /// (their names are not in the result: a store resolves them with this function on the
    /// destination). Throws as ``check(_:entities:)`` does, and
    /// ``StoreError/Kind/unknownRelationship`` for an `any`/`all` of a relationship `entity` lacks.
    public static func check(_ condition: Condition, of entity: Entity, entities: (String) -> Entity?) throws -> [String: AttributePath] {
        var paths: [String: AttributePath] = [:]
        // In a stable order, so that the first bad name is the one reported.
        for name in condition.attributes.sorted() {
            paths[name] = try AttributePaths.resolve(name, in: entities, entity: entity)
        }
        for (relationship, inner) in condition.quantified {
            _ = try check(inner, of: destination(of: relationship, from: entity, entities: entities), entities: entities)
        }
        return paths
    }

    /// The entity `relationship` of `entity` leads to, for an ``Condition/any(_:_:)`` or
    /// ``Condition/all(_:_:)``.
    public static func destination(of relationship: String, from entity: Entity, entities: (String) -> Entity?) throws -> Entity {
        guard let declared = entity.relationship(named: relationship) else {
            let what = entity.attribute(named: relationship) != nil ? "an attribute, not a relationship" : "no relationship of \(entity.name)"
            throw StoreError(.unknownRelationship, entity: entity.name, member: relationship,
                             "any/all over '\(relationship)': it is \(what)")
        }
        guard let destination = entities(declared.destination) else {
            throw StoreError(.unknownEntity, entity: declared.destination, "unknown entity '\(declared.destination)'")
        }
        return destination
    }
}
