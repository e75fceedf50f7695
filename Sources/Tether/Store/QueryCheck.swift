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
        var paths: [String: AttributePath] = [:]
        func resolve(_ name: String) throws -> AttributePath {
            if let known = paths[name] { return known }
            let path = try AttributePaths.resolve(name, in: entities, entity: entity)
            paths[name] = path
            return path
        }
        // In a stable order, so that the first bad name is the one reported.
        for name in (query.condition?.attributes ?? []).sorted() { _ = try resolve(name) }
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
}
