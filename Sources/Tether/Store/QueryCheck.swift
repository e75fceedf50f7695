/// The checks every store makes of a query before answering it, with the same errors: each
/// attribute it names exists, and no sort key orders by an array, a map or a JSON value (no order
/// of them means anything, and two stores would not agree on one).
package enum QueryCheck {
    /// Throws ``StoreError/Kind/unknownAttribute`` for a name `type` does not know and
    /// ``StoreError/Kind/unsupported`` for a sort by a collection attribute; `type` gives the
    /// type of an attribute of the query's entity by name.
    package static func check(_ query: Query, type: (String) -> AttributeType?) throws {
        for name in query.condition?.attributes ?? [] where type(name) == nil {
            throw StoreError(.unknownAttribute, entity: query.entity, member: name, "\(query.entity) has no attribute '\(name)'")
        }
        for key in query.sort {
            guard let attributeType = type(key.attribute) else {
                throw StoreError(.unknownAttribute, entity: query.entity, member: key.attribute, "\(query.entity) has no attribute '\(key.attribute)'")
            }
            if attributeType.isCollection {
                throw StoreError(
                    .unsupported, entity: query.entity, member: key.attribute,
                    "\(query.entity).\(key.attribute) is \(attributeType); a query cannot sort by an array, a map or a JSON value")
            }
        }
    }
}
