import Foundation
import Synchronization

/// One coded property of an ``EntityModel``, as its `init(from:)` asks for it.
struct ModelMember: Sendable {
    enum Kind: Sendable {
        case attribute(AttributeType, optional: Bool)
        case toOne(any EntityModel.Type)
        case toMany(any EntityModel.Type)
    }
    let name: String
    let kind: Kind

    var isRelationship: Bool {
        if case .attribute = kind { return false }
        return true
    }
}

/// What a model type declares, found once by decoding it with a probing decoder: its members,
/// and instances that tell which member a key path reads (in the probe marked for a member,
/// only that member differs from the base probe).
final class ModelLayout<Model: EntityModel>: Sendable {
    let entityName: String
    let members: [ModelMember]
    /// Where a decoder finds each member in a typed read.
    let columns: ModelColumns
    let description: ModelDescription<Model>
    private let base: Model
    private let marked: [(name: String, model: Model)]
    private let names = Mutex<[KeyPathKey: String]>([:])
    /// The paths through relationships key paths read (``queryName(of:)``).
    private let paths = Mutex<[KeyPathKey: String]>([:])

    /// Key paths are immutable: sharing one between threads is safe.
    private struct KeyPathKey: Hashable, @unchecked Sendable {
        let keyPath: AnyKeyPath
    }

    init() throws(ModelError) {
        entityName = Model.entityName
        let probe = ModelProbe(entity: Model.entityName)
        let (base, members) = try probe.decode(Model.self, marking: nil)
        self.base = base
        self.members = members
        columns = ModelColumns(members)
        var marked: [(String, Model)] = []
        for member in members {
            marked.append((member.name, try probe.decode(Model.self, marking: member.name).model))
        }
        self.marked = marked
        var description = ModelDescription<Model>()
        Model.describe(&description)
        self.description = description
    }

    subscript(member name: String) -> ModelMember? { members.first { $0.name == name } }

    /// The name of the coded property `keyPath` reads, or nil (a computed or uncoded property).
    func name<V: Encodable>(of keyPath: KeyPath<Model, V>) -> String? {
        if let known = names.withLock({ $0[KeyPathKey(keyPath: keyPath)] }) { return known }
        // A computed property (or a chain, `\.owner?.login`) has no offset in a struct; it
        // could read a coded property and pass for it.
        guard Model.self is AnyClass || MemoryLayout<Model>.offset(of: keyPath) != nil else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        func print(_ model: Model) -> Data? { try? encoder.encode(model[keyPath: keyPath]) }
        let basePrint = print(base)
        guard let name = marked.first(where: { print($0.model) != basePrint })?.name else { return nil }
        names.withLock { $0[KeyPathKey(keyPath: keyPath)] = name }
        return name
    }

    /// `name(of:)`, or for a key path through optional to-one relationships
    /// (`\.repository?.owner?.login`) the dotted path of the attribute it reads
    /// (`"repository.owner.login"`, ``pathName(of:)``): what a condition or a sort key names.
    func queryName<V: Encodable>(of keyPath: KeyPath<Model, V>) -> String? {
        let own = name(of: keyPath)
        // In a class model, a chain (`\.reblog?.content`) passes for the relationship it starts with.
        if let own, self[member: own]?.isRelationship != true { return own }
        if let known = paths.withLock({ $0[KeyPathKey(keyPath: keyPath)] }) { return known }
        guard let path = pathName(of: keyPath) else { return own }
        paths.withLock { $0[KeyPathKey(keyPath: keyPath)] = path }
        return path
    }

    /// `name(of:)`, or an ``ModelError/Kind/unmappedKeyPath`` error.
    func requireName<V: Encodable>(of keyPath: KeyPath<Model, V>, for use: String) throws(ModelError) -> String {
        guard let name = name(of: keyPath) else {
            throw ModelError(
                .unmappedKeyPath, entity: entityName,
                "\(entityName): the key path in \(use) reads no coded property of \(Model.self) (a computed property, or one left out of its CodingKeys)")
        }
        return name
    }

    /// `requireName(of:for:)` for a key path that must read an attribute (a predicate or a
    /// sort): a relationship has no value to compare.
    func requireAttributeName<V: Encodable>(of keyPath: KeyPath<Model, V>, for use: String) throws(ModelError) -> String {
        guard let name = queryName(of: keyPath) else {
            throw ModelError(
                .unmappedKeyPath, entity: entityName,
                "\(entityName): the key path in \(use) reads no coded property of \(Model.self) (a computed property, one left out of its CodingKeys, or a path through more than \(Self.pathDepth) to-one relationships)")
        }
        if self[member: name]?.isRelationship == true {
            throw ModelError(
                .unmappedKeyPath, entity: entityName, member: name,
                "\(entityName).\(name) is a relationship; \(use) compares attributes (use a condition on the related model's identity instead)")
        }
        return name
    }

    /// The schema entity the model declares. Inverses named in the description are resolved
    /// through `layouts`; the others are paired by ``Schema/init(models:entities:)``.
    func entity(layouts: ModelLayoutCache) throws -> Entity {
        func resolve(_ member: ModelDescription<Model>.Member, _ what: String) throws(ModelError) -> String {
            guard let name = member.resolve(self) else {
                throw ModelError(
                    .unmappedKeyPath, entity: entityName,
                    "\(entityName): the key path given to \(what) in describe(_:) reads no coded property of \(Model.self)")
            }
            return name
        }
        var ordered = Set<String>()
        for member in description.ordered { ordered.insert(try resolve(member, "ordered")) }
        var rules: [String: DeleteRule] = [:]
        for (member, rule) in description.deleteRules { rules[try resolve(member, "deleteRule")] = rule }
        var inverses: [String: String] = [:]
        for (member, destination, back) in description.inverses {
            let name = try resolve(member, "inverse")
            guard let inverse = try back(layouts) else {
                throw ModelError(
                    .unmappedKeyPath, entity: entityName, member: name,
                    "\(entityName).\(name): the inverse key path reads no coded property of \(destination)")
            }
            inverses[name] = inverse
        }
        var attributes: [Attribute] = []
        var relationships: [Relationship] = []
        for member in members {
            switch member.kind {
            case .attribute(let type, _):
                attributes.append(Attribute(member.name, type))
            case .toOne(let destination):
                relationships.append(Relationship(
                    member.name, .toOne, destination.entityName, inverse: inverses[member.name],
                    deleteRule: rules[member.name] ?? .nullify))
            case .toMany(let destination):
                relationships.append(Relationship(
                    member.name, ordered.contains(member.name) ? .orderedToMany : .toMany, destination.entityName,
                    inverse: inverses[member.name], deleteRule: rules[member.name] ?? .nullify))
            }
        }
        var identity: [String] = []
        for member in description.identity { identity.append(try resolve(member, "identity")) }
        return Entity(
            Model.entityName, identity: description.declaresNoIdentity ? [] : (identity.isEmpty ? nil : identity),
            attributes: attributes, relationships: relationships)
    }

    /// The JSON keys and foreign keys the description names.
    func keyOverrides() throws -> KeyOverrides {
        var table: [String: JSONKeyPath] = [:]
        for (member, key) in description.jsonKeys {
            guard let name = member.resolve(self) else {
                throw ModelError(.unmappedKeyPath, entity: entityName, "\(entityName): the key path given to jsonKey reads no coded property")
            }
            table[name] = key
        }
        var foreignKeys: [String: String] = [:]
        for (member, key) in description.foreignKeys {
            guard let name = member.resolve(self) else {
                throw ModelError(.unmappedKeyPath, entity: entityName, "\(entityName): the key path given to foreignKey reads no coded property")
            }
            foreignKeys[name] = key
        }
        var fallbacks: [String: [JSONKeyPath]] = [:]
        for (member, keys) in description.fallbackKeys {
            guard let name = member.resolve(self) else {
                throw ModelError(.unmappedKeyPath, entity: entityName, "\(entityName): the key path given to fallbackKeys reads no coded property")
            }
            fallbacks[name, default: []].append(contentsOf: keys)
        }
        var ignoringNull = Set<String>()
        for member in description.ignoringNull {
            guard let name = member.resolve(self) else {
                throw ModelError(.unmappedKeyPath, entity: entityName, "\(entityName): the key path given to ignoresNull reads no coded property")
            }
            ignoringNull.insert(name)
        }
        var dateFormats: [String: DateDecoding] = [:]
        for (member, decoding) in description.dateFormats {
            guard let name = member.resolve(self) else {
                throw ModelError(.unmappedKeyPath, entity: entityName, "\(entityName): the key path given to dateFormats reads no coded property")
            }
            dateFormats[name] = decoding
        }
        return KeyOverrides(
            table.isEmpty ? [:] : [entityName: table], foreignKeys: foreignKeys.isEmpty ? [:] : [entityName: foreignKeys],
            fallbacks: fallbacks.isEmpty ? [:] : [entityName: fallbacks], ignoringNull: ignoringNull.isEmpty ? [:] : [entityName: ignoringNull],
            dateFormats: dateFormats.isEmpty ? [:] : [entityName: dateFormats])
    }

    /// The names of the read-only properties.
    func readOnlyNames() throws -> Set<String> {
        var names = Set<String>()
        for member in description.readOnly {
            guard let name = member.resolve(self) else {
                throw ModelError(.unmappedKeyPath, entity: entityName, "\(entityName): the key path given to readOnly reads no coded property")
            }
            names.insert(name)
        }
        return names
    }
}

/// The layouts of the model types a client has met, by type; each is probed once.
final class ModelLayoutCache: Sendable {
    private let layouts = Mutex<[ObjectIdentifier: any Sendable]>([:])
    /// The model types checked against the client's schema.
    private let checked = Mutex<Set<ObjectIdentifier>>([])

    init() {}

    /// A cache with the same probed layouts, none of them checked yet (for another client).
    func copy() -> ModelLayoutCache {
        let copy = ModelLayoutCache()
        let known = layouts.withLock { $0 }
        copy.layouts.withLock { $0 = known }
        return copy
    }

    func layout<Model: EntityModel>(of type: Model.Type) throws(ModelError) -> ModelLayout<Model> {
        let key = ObjectIdentifier(type)
        if let known = layouts.withLock({ $0[key] }) as? ModelLayout<Model> { return known }
        let layout = try ModelLayout<Model>()  // outside the lock: probing may decode other models
        layouts.withLock { $0[key] = layout }
        return layout
    }

    /// The layout, checked once against `schema`: the entity exists and every member matches
    /// its attribute or relationship.
    func layout<Model: EntityModel>(of type: Model.Type, in schema: Schema) throws(ModelError) -> ModelLayout<Model> {
        let layout = try layout(of: type)
        let key = ObjectIdentifier(type)
        if checked.withLock({ $0.contains(key) }) { return layout }
        try Self.check(layout, against: schema)
        _ = checked.withLock { $0.insert(key) }
        return layout
    }

    private static func check<Model>(_ layout: ModelLayout<Model>, against schema: Schema) throws(ModelError) {
        let name = layout.entityName
        guard let entity = schema[name] else {
            throw ModelError(
                .unknownEntity, entity: name,
                "the client's schema has no entity '\(name)' for \(Model.self); build the client with Client.Builder(models:) or declare the entity")
        }
        for member in layout.members {
            switch member.kind {
            case .attribute(let type, _):
                guard let attribute = entity.attribute(named: member.name) else {
                    throw ModelError(
                        .mismatchedProperty, entity: name, member: member.name,
                        "\(name) has no attribute '\(member.name)' for \(Model.self).\(member.name)")
                }
                guard attribute.type.isCompatible(with: type) else {
                    throw ModelError(
                        .mismatchedProperty, entity: name, member: member.name,
                        "\(name).\(member.name) is \(attribute.type), but \(Model.self).\(member.name) codes as \(type)")
                }
            case .toOne(let destination), .toMany(let destination):
                guard let relationship = entity.relationship(named: member.name) else {
                    throw ModelError(
                        .mismatchedProperty, entity: name, member: member.name,
                        "\(name) has no relationship '\(member.name)' for \(Model.self).\(member.name)")
                }
                let toMany: Bool
                if case .toMany = member.kind { toMany = true } else { toMany = false }
                guard relationship.isToMany == toMany, relationship.destination == destination.entityName else {
                    throw ModelError(
                        .mismatchedProperty, entity: name, member: member.name,
                        "\(name).\(member.name) is a \(relationship.isToMany ? "to-many" : "to-one") relationship to \(relationship.destination), "
                            + "but \(Model.self).\(member.name) is \(toMany ? "an array of" : "an optional") \(destination.entityName)")
                }
            }
        }
    }
}

extension AttributeType {
    /// Whether a property coded as `coded` can read and write this attribute.
    func isCompatible(with coded: AttributeType) -> Bool {
        switch (self, coded) {
        case (.int16, .int16), (.int16, .int32), (.int16, .int64),
             (.int32, .int16), (.int32, .int32), (.int32, .int64),
             (.int64, .int16), (.int64, .int32), (.int64, .int64):
            return true
        case (.double, .double), (.double, .float), (.float, .double), (.float, .float):
            return true
        case (.transformable, _):
            return true
        case (.array(let stored), .array(let element)), (.map(let stored), .map(let element)):
            return stored.isCompatible(with: element)
        default:
            return self == coded
        }
    }
}

extension Schema {
    /// The schema of ``EntityModel`` types, derived from their coded properties and
    /// descriptions, plus any hand-declared `entities`.
    ///
    /// A relationship without a declared inverse is paired with the destination's single
    /// relationship back (`User.repositories` with `Repository.owner`); with several candidates
    /// it stays without inverse unless ``ModelDescription/inverse(_:_:)-(KeyPath<Model,D?>Sendable,_)``
    /// names one.
    public init(models: [any EntityModel.Type], entities: [Entity] = []) throws {
        try self.init(models: models, entities: entities, layouts: ModelLayoutCache())
    }

    init(models: [any EntityModel.Type], entities: [Entity], layouts: ModelLayoutCache) throws {
        var all = entities
        var seen = Set(entities.map(\.name))
        for model in models {
            func derive<M: EntityModel>(_ type: M.Type) throws -> Entity { try layouts.layout(of: type).entity(layouts: layouts) }
            let entity = try derive(model)
            guard seen.insert(entity.name).inserted else {
                throw ModelError(
                    .unknownEntity, entity: entity.name,
                    "entity '\(entity.name)' is declared twice (by \(model) and another model or entity); give one model another entityName")
            }
            all.append(entity)
        }
        // Declared inverses fill in the other side.
        for entity in all {
            for relationship in entity.relationships {
                guard let inverse = relationship.inverse,
                    let destination = all.firstIndex(where: { $0.name == relationship.destination }),
                    let back = all[destination].relationships.firstIndex(where: { $0.name == inverse }),
                    all[destination].relationships[back].inverse == nil
                else { continue }
                all[destination].relationships[back].inverse = relationship.name
            }
        }
        // Undeclared: the single pair between two entities.
        for a in all.indices {
            for r in all[a].relationships.indices where all[a].relationships[r].inverse == nil {
                let relationship = all[a].relationships[r]
                guard relationship.destination != all[a].name,
                    let b = all.firstIndex(where: { $0.name == relationship.destination })
                else { continue }
                let forward = all[a].relationships.filter { $0.destination == all[b].name }
                let backward = all[b].relationships.indices.filter { all[b].relationships[$0].destination == all[a].name }
                guard forward.count == 1, backward.count == 1, all[b].relationships[backward[0]].inverse == nil else { continue }
                all[a].relationships[r].inverse = all[b].relationships[backward[0]].name
                all[b].relationships[backward[0]].inverse = relationship.name
            }
        }
        try self.init(all)
    }
}
