/// A name a condition or a sort key uses: an attribute of the query's entity (`"title"`), or a
/// dotted path through to-one relationships to an attribute of the last one's destination
/// (`"repository.owner.login"`). Every store resolves names with ``AttributePaths/resolve(_:in:entity:)``
/// (or ``QueryCheck/check(_:entities:)``), so they accept and refuse the same paths (public for
/// stores of other packages, such as TetherPostgres); a path's value is the attribute's value on the
/// object the relationships lead to, and unset when a relationship on the way has no target.
public struct AttributePath: Sendable, Hashable {
    /// One to-one relationship on the way.
    public struct Hop: Sendable, Hashable {
        /// The relationship's name on the entity the hop starts from.
        public let relationship: String
        /// The entity the hop starts from.
        public let source: String
        /// The entity the relationship leads to.
        public let destination: String
    }

    /// The name as the query wrote it.
    public let name: String
    /// The relationships followed, in order (empty for an attribute of the entity itself).
    public let hops: [Hop]
    /// The attribute read on the last entity.
    public let attribute: String
    /// Its type.
    public let type: AttributeType

    /// Whether the name goes through a relationship.
    public var isPath: Bool { !hops.isEmpty }
    /// The entity whose attribute is read.
    public var entity: String? { hops.last?.destination }
}

/// Resolution of the names a query uses.
public enum AttributePaths {
    /// Resolves `name` against `entity` (an attribute's own name first, so that a name with a
    /// dot that is an attribute stays one). `entities` gives an entity of the schema by name.
    ///
    /// Errors: ``StoreError/Kind/unknownAttribute`` for a name that is neither an attribute nor
    /// a path, ``StoreError/Kind/unsupported`` for a path through a to-many relationship or one
    /// that ends at a relationship.
    public static func resolve(_ name: String, in entities: (String) -> Entity?, entity: Entity) throws -> AttributePath {
        if let attribute = entity.attribute(named: name) {
            return AttributePath(name: name, hops: [], attribute: name, type: attribute.type)
        }
        let components = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard components.count > 1 else {
            throw StoreError(.unknownAttribute, entity: entity.name, member: name, "\(entity.name) has no attribute '\(name)'")
        }
        var current = entity
        var hops: [AttributePath.Hop] = []
        for component in components.dropLast() {
            guard let relationship = current.relationship(named: component) else {
                throw StoreError(
                    .unknownAttribute, entity: entity.name, member: name,
                    "\(entity.name) has no attribute '\(name)': \(current.name) has no relationship '\(component)'")
            }
            guard !relationship.isToMany else {
                throw StoreError(
                    .unsupported, entity: entity.name, member: name,
                    "'\(name)' goes through \(current.name).\(component), a to-many relationship; a path goes through to-one relationships only")
            }
            guard let destination = entities(relationship.destination) else {
                throw StoreError(.unknownEntity, entity: relationship.destination, "unknown entity '\(relationship.destination)'")
            }
            hops.append(AttributePath.Hop(relationship: component, source: current.name, destination: destination.name))
            current = destination
        }
        let last = components[components.count - 1]
        guard let attribute = current.attribute(named: last) else {
            let what = current.relationship(named: last) != nil ? "a relationship, not an attribute" : "no attribute of \(current.name)"
            throw StoreError(
                current.relationship(named: last) != nil ? .unsupported : .unknownAttribute, entity: entity.name, member: name,
                "'\(name)' ends at '\(last)', \(what); a path ends at an attribute")
        }
        return AttributePath(name: name, hops: hops, attribute: last, type: attribute.type)
    }
}

/// The joins a SQL store needs for the paths a query names: one per distinct prefix of
/// relationships (`repository`, `repository.owner`), in a stable order (by name, so that one query
/// is always the same SQL), each starting from the entity's own table or from an earlier join.
/// A store turns each into its own join (a foreign key, a join table) with an alias of its own.
public struct PathJoins: Sendable {
    /// One relationship followed.
    public struct Join: Sendable {
        /// The relationship, and the entities it goes from and to.
        public let hop: AttributePath.Hop
        /// The join this one starts from (an index into ``PathJoins/joins``), or nil for the
        /// query's own table.
        public let parent: Int?
    }

    /// Numbers the subqueries of one statement (an `any`/`all` is one), so that the tables of
    /// each have aliases of their own: `_q0`, `_q1`, ... Shared by a statement's scopes.
    public final class SubqueryAliases {
        private var given = 0

        /// A counter from `_q0`.
        public init() {}

        /// A new alias prefix.
        public func next() -> String {
            defer { given += 1 }
            return "_q\(given)"
        }
    }

    /// The joins, each after the one it starts from.
    public let joins: [Join]
    /// For each name that is a path, the join whose destination holds its attribute.
    public let targets: [String: Int]

    /// The joins of `paths` (names that are not paths need none).
    public init(_ paths: [String: AttributePath]) {
        var joins: [Join] = []
        var byPrefix: [String: Int] = [:]
        var targets: [String: Int] = [:]
        for name in paths.keys.sorted() {
            let path = paths[name]!
            guard path.isPath else { continue }
            var prefix = ""
            var at: Int?
            for hop in path.hops {
                prefix += (prefix.isEmpty ? "" : ".") + hop.relationship
                if let known = byPrefix[prefix] {
                    at = known
                    continue
                }
                joins.append(Join(hop: hop, parent: at))
                at = joins.count - 1
                byPrefix[prefix] = at
            }
            targets[name] = at
        }
        self.joins = joins
        self.targets = targets
    }
}

extension Query {
    /// ``apply(to:)`` for a query whose condition or sort keys name paths: `pathValues` gives the
    /// values of the paths for an object (by name), which are set beside its own values while the
    /// query is evaluated; the objects returned hold their own values only.
    public func apply(to objects: [Object], pathValues: (ObjectID) -> [String: Value]) -> [Object] {
        apply(to: objects, pathValues: pathValues) { _, _, every, _ in every }
    }

    /// ``apply(to:pathValues:)``, with `related` answering the condition's `any` and `all` as in
    /// ``apply(to:related:)``.
    public func apply(to objects: [Object], pathValues: (ObjectID) -> [String: Value],
                      related: (ObjectID, String, Bool, Condition) -> Bool) -> [Object] {
        var originals: [ObjectID: Object] = [:]
        originals.reserveCapacity(objects.count)
        let extended = objects.map { object -> Object in
            originals[object.id] = object
            var values = object.values
            values.merge(pathValues(object.id)) { own, _ in own }
            return Object(id: object.id, values: values)
        }
        return apply(to: extended, related: related).map { originals[$0.id]! }
    }
}

extension AttributePaths {
    /// The value `path` has for each of `ids` (objects of its entity) that has one, read through
    /// the store's batched reads: one ``StoreReader/related(_:of:)`` per relationship on the way,
    /// then the objects at the end.
    package static func values(of path: AttributePath, for ids: [ObjectID], reader: any StoreReader) throws -> [ObjectID: Value] {
        // Where each object has got to.
        var at: [ObjectID: ObjectID] = Dictionary(ids.map { ($0, $0) }, uniquingKeysWith: { first, _ in first })
        for hop in path.hops {
            var seen = Set<ObjectID>()
            let sources = at.values.filter { seen.insert($0).inserted }
            let targets = try reader.related(hop.relationship, of: sources)
            at = at.compactMapValues { targets[$0]?.first }
        }
        var seen = Set<ObjectID>()
        let ends = try reader.objects(at.values.filter { seen.insert($0).inserted })
        let byID = Dictionary(ends.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return at.compactMapValues { byID[$0]?.values[path.attribute] }
    }
}
