import Foundation

/// One entity's mapping prepared for an import: keys as bytes, destinations by ordinal.
final class EntityPlan: Sendable {
    let mapping: EntityMapping
    /// Position in ``Importer/plans`` (entity names sorted).
    let ordinal: Int
    let attributeKeys: [[ImportKey]]
    let identityKeys: [[ImportKey]]
    let relationshipKeys: [[ImportKey]]
    let foreignKeys: [ImportKey]
    /// The ordinal of each relationship's destination (nil when it is not mapped).
    let destinations: [Int?]

    var name: String { mapping.name }

    /// Names of the mapped attributes, by position (the columns of inserts and lookups).
    let attributeNames: [String]
    /// How each mapped attribute's values convert, by position.
    let directKinds: [DirectKind]
    /// The position of each identity attribute among the attributes, in identity order: an
    /// object's identity values are those of its identity key, whatever the attribute's own
    /// conversion gave, so that no object is stored without (or with another) identity.
    let identityPositions: [Int]
    /// ``identityPositions`` as a set, for the mapper's attribute loop (which skips them).
    let identityPositionSet: PositionSet
    /// Positions of the to-one relationships with a mapped destination: linked with the row on insert.
    let toOne: [Int]
    /// The position of each relationship's inverse among the destination's mapped relationships
    /// (nil when it has none, or it is not mapped).
    let inverses: [Int?]
    /// Positions of the to-one relationships whose current targets the lookup reads
    /// (``LookupBatch/relationships``), so that an unchanged link is not read again: those of
    /// ``toOne`` whose inverse is not to-one. Linking an object one-to-one unlinks its partner's
    /// previous partner, so such a target read at the lookup could be stale by the time the link
    /// is compared.
    let lookupLinks: [Int]
    /// By relationship position: linking takes a target from the object it was linked to
    /// before (the inverse is to-one, and the destination has identity: owned objects are never
    /// linked to another parent). A link of a repeated object that a later occurrence replaces is
    /// then still applied, in payload order (``BatchMapper``, ``ImportSession``).
    let movesTargets: [Bool]
    /// The first key of every key path above; the fields below index into it.
    let keyTable: KeyTable
    let attributeFields: [Field]
    let identityFields: [Field]
    let relationshipFields: [Field]
    let foreignKeyFields: [Field]
    /// The fallback key paths of each attribute, identity attribute and relationship
    /// (``AttributeMapping/fallbackKeyPaths``), read only when its own field is absent.
    let attributeFallbacks: [[Field]]
    let identityFallbacks: [[Field]]
    let relationshipFallbacks: [[Field]]
    /// By attribute position: whether a `null` in the payload leaves the value as it is
    /// (``AttributeMapping/ignoresNull``) instead of clearing it.
    let attributeIgnoresNull: [Bool]
    /// By index in ``keyTable``: whether the key is only where an identity is read (its own key
    /// or a fallback), so that an object matching no other key is known to carry nothing of the
    /// entity but its identity (``BatchMapper``'s check for hollow objects).
    let identityOnlyKeys: [Bool]

    /// A key path as read from an object matched against ``keyTable``: the first key's index,
    /// then the rest of the path (usually empty).
    struct Field: Sendable {
        let key: Int
        let rest: [ImportKey]
    }

    /// The plans of every entity of `mapping`, by ordinal (entity names sorted). Computed once,
    /// when the client is built.
    static func plans(for mapping: Mapping) -> ImportPlans {
        let names = mapping.entities.keys.sorted()
        var index: [String: Int] = [:]
        for (ordinal, name) in names.enumerated() { index[name] = ordinal }
        let plans = names.enumerated().map { ordinal, name in EntityPlan(mapping[name]!, ordinal: ordinal, index: index, in: mapping) }
        // Insert order: the destinations of to-one relationships before their sources, so that a
        // new object's to-one targets have ids when it is inserted (a cycle is broken anywhere;
        // its links are then set after the inserts).
        var order: [Int] = []
        var state = [UInt8](repeating: 0, count: plans.count)  // 0 new, 1 visiting, 2 done
        func visit(_ ordinal: Int) {
            guard state[ordinal] == 0 else { return }
            state[ordinal] = 1
            for r in plans[ordinal].toOne { if let d = plans[ordinal].destinations[r] { visit(d) } }
            state[ordinal] = 2
            order.append(ordinal)
        }
        for ordinal in plans.indices { visit(ordinal) }
        return ImportPlans(plans: plans, index: index, insertOrder: order)
    }

    init(_ mapping: EntityMapping, ordinal: Int, index: [String: Int], in all: Mapping) {
        func keys(_ path: JSONKeyPath) -> [ImportKey] { path.components.map(ImportKey.init) }
        self.mapping = mapping
        self.ordinal = ordinal
        attributeKeys = mapping.attributes.map { keys($0.keyPath) }
        identityKeys = mapping.identity.map { keys($0.keyPath) }
        relationshipKeys = mapping.relationships.map { keys($0.keyPath) }
        foreignKeys = mapping.relationships.map { ImportKey($0.foreignKey) }
        let destinations = mapping.relationships.map { index[$0.relationship.destination] }
        self.destinations = destinations
        attributeNames = mapping.attributes.map(\.name)
        // An attribute with date formats of its own is read straight from the bytes only when
        // its first format is ISO 8601 (and the client's is too: the fast path checks that).
        directKinds = mapping.attributes.map { attribute in
            if let own = attribute.dateDecoding, own.formats.first?.isISO8601 != true { return .general }
            return DirectKind(attribute.type)
        }
        identityPositions = mapping.identity.map { identity in mapping.attributes.firstIndex { $0.name == identity.name }! }
        var identityPositionSet = PositionSet()
        for position in identityPositions { identityPositionSet.insert(position) }
        self.identityPositionSet = identityPositionSet
        var firstKeys: [ImportKey] = []
        var firstIndex: [String: Int] = [:]
        func field(_ path: [ImportKey]) -> Field {
            let first = path[0]
            if firstIndex[first.string] == nil {
                firstIndex[first.string] = firstKeys.count
                firstKeys.append(first)
            }
            return Field(key: firstIndex[first.string]!, rest: Array(path.dropFirst()))
        }
        attributeFields = attributeKeys.map(field)
        identityFields = identityKeys.map(field)
        relationshipFields = relationshipKeys.map(field)
        foreignKeyFields = foreignKeys.map { field([$0]) }
        attributeFallbacks = mapping.attributes.map { $0.fallbackKeyPaths.map { field(keys($0)) } }
        attributeIgnoresNull = mapping.attributes.map(\.ignoresNull)
        identityFallbacks = mapping.identity.map { $0.fallbackKeyPaths.map { field(keys($0)) } }
        relationshipFallbacks = mapping.relationships.map { $0.fallbackKeyPaths.map { field(keys($0)) } }
        keyTable = KeyTable(firstKeys)
        var identityOnlyKeys = [Bool](repeating: false, count: firstKeys.count)
        for field in identityFields + identityFallbacks.joined() { identityOnlyKeys[field.key] = true }
        for field in attributeFields.enumerated().filter({ !identityPositionSet.contains($0.offset) }).map(\.element)
            + attributeFallbacks.enumerated().filter({ !identityPositionSet.contains($0.offset) }).flatMap(\.element)
            + relationshipFields + relationshipFallbacks.joined() + foreignKeyFields
        {
            identityOnlyKeys[field.key] = false
        }
        self.identityOnlyKeys = identityOnlyKeys
        toOne = mapping.relationships.indices.filter { !mapping.relationships[$0].relationship.isToMany && destinations[$0] != nil }
        inverses = mapping.relationships.map { relationship in
            guard let inverse = relationship.relationship.inverse, let destination = all[relationship.relationship.destination] else { return nil }
            return destination.relationships.firstIndex { $0.name == inverse }
        }
        movesTargets = mapping.relationships.map { relationship in
            guard let inverse = relationship.relationship.inverse, let destination = all[relationship.relationship.destination],
                !destination.identity.isEmpty else { return false }
            return destination.relationship(inverse).map { !$0.relationship.isToMany } ?? false
        }
        lookupLinks = toOne.filter { r in
            let relationship = mapping.relationships[r].relationship
            guard let inverse = relationship.inverse else { return true }
            return all[relationship.destination]?.entity.relationship(named: inverse)?.isToMany ?? false
        }
    }
}

/// Every entity's ``EntityPlan``, computed once per client.
struct ImportPlans: Sendable {
    /// By ordinal (entity names sorted).
    let plans: [EntityPlan]
    let index: [String: Int]
    /// Ordinals in the order new objects are inserted: to-one destinations first.
    let insertOrder: [Int]
}
