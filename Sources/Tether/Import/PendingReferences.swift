import Foundation

/// Pending references: an id (`owner_id: 5`, `label_ids: [1, 2]`) naming an object that is not
/// stored yet is kept, and linked in the transaction of whichever later import inserts it.
///
/// They are kept in the store itself, as objects of one more entity that the builder adds to the
/// schema it prepares the store with (``entityName``; it is not part of ``Client/schema``), so that
/// they survive closing and reopening a persistent store and work with any ``Store``.
enum PendingReferences {
    static let entityName = "_TetherPendingReference"

    /// One pending link: the source object, its relationship, the target's entity and encoded
    /// identity (``encode(_:)``), and the target's position among the ids the payload listed.
    static let entity = Entity(entityName, attributes: [
        Attribute("sourceEntity", .string),
        Attribute("sourceRow", .int64),
        Attribute("relationship", .string),
        Attribute("targetEntity", .string),
        Attribute("target", .string),
        Attribute("position", .int64),
    ])

    /// The identity of a target as one string, the same for the key an id reference names and the
    /// key of the object an import later inserts.
    static func encode(_ key: IdentityKey) -> String {
        key.values.map { value -> String in
            switch value {
            case .int(let i): "i\(i)"
            case .string(let s): "s" + s
            case .double(let d): "f\(d.bitPattern)"
            case .bool(let b): b ? "b1" : "b0"
            case .date(let d): "d\(d.timeIntervalSinceReferenceDate.bitPattern)"
            case .uuid(let u): "u" + u.uuidString
            case .url(let u): "l" + u.absoluteString
            case .decimal(let d): "m\(d)"
            case .data(let d): "x" + d.base64EncodedString()
            }
        }.joined(separator: "\u{1F}")
    }

    /// A stored pending reference.
    struct Row {
        let id: ObjectID
        let source: ObjectID
        let relationship: String
        let target: String
        let position: Int

        init?(_ object: Object) {
            guard case .string(let entity)? = object["sourceEntity"], case .int(let row)? = object["sourceRow"],
                case .string(let relationship)? = object["relationship"], case .string(let target)? = object["target"]
            else { return nil }
            id = object.id
            source = ObjectID(entity: entity, rowID: row)
            self.relationship = relationship
            self.target = target
            if case .int(let position)? = object["position"] { self.position = Int(position) } else { position = 0 }
        }
    }
}

extension Schema {
    /// The schema a client prepares its store with: its own entities and the pending references'.
    func addingPendingReferences() throws(SchemaError) -> Schema {
        guard self[PendingReferences.entityName] == nil else {
            throw SchemaError(.duplicateName, entity: PendingReferences.entityName, member: nil,
                              "'\(PendingReferences.entityName)' is the name of Tether's own entity of pending references")
        }
        return try Schema(entities + [PendingReferences.entity])
    }
}
