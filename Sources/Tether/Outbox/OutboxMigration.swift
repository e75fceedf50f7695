import Foundation

extension TetherBookkeeping {
    /// A rename that a store's migration applies to Tether's own records as well.
    package enum Rename: Sendable {
        /// An entity renamed.
        case entity(from: String, to: String)
        /// An attribute or relationship of `entity` renamed.
        case property(entity: String, from: String, to: String)
    }

    /// The name of the outbox's entity, whose entries a rename rewrites
    /// (``outboxEntry(_:renaming:)``).
    package static let outboxEntity = OutboxStorage.entityName

    /// The attributes of an outbox entry that may name an entity or a property.
    package static let outboxNamingAttributes = ["key", "entity", "row", "targetEntity", "relationship", "local"]

    /// The values of the stored outbox entry `values` (its ``outboxNamingAttributes``) that
    /// `rename` changes, with their new values; empty when the entry does not name what is
    /// renamed.
    package static func outboxEntry(_ values: [String: Value], renaming rename: Rename) throws -> [String: Value] {
        guard case .string(let entity)? = values["entity"], case .int(let row)? = values["row"] else { return [:] }
        var changed: [String: Value] = [:]
        // The key: "o␟Entity␟row" for an object's entry, "l␟Entity␟row␟relationship␟Target␟row" for a link's.
        if case .string(let key)? = values["key"] {
            var parts = key.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
            let link = parts.first == "l" && parts.count == 6
            switch rename {
            case .entity(let from, let to):
                if parts.count > 1 && parts[1] == from { parts[1] = to }
                if link && parts[4] == from { parts[4] = to }
            case .property(let owner, let from, let to):
                if link && parts[1] == owner && parts[3] == from { parts[3] = to }
            }
            let renamed = parts.joined(separator: "\u{1F}")
            if renamed != key { changed["key"] = .string(renamed) }
        }
        switch rename {
        case .entity(let from, let to):
            if entity == from { changed["entity"] = .string(to) }
            if values["targetEntity"] == .string(from) { changed["targetEntity"] = .string(to) }
        case .property(let owner, let from, let to):
            if entity == owner && values["relationship"] == .string(from) { changed["relationship"] = .string(to) }
        }
        if case .string(let text)? = values["local"] {
            let before = try LocalChanges(decoding: text, of: ObjectID(entity: entity, rowID: row))
            var local = before
            switch rename {
            case .entity(let from, let to):
                local.related = local.related.mapValues { ids in
                    ids.map { $0.entity == from ? ObjectID(entity: to, rowID: $0.rowID) : $0 }
                }
            case .property(let owner, let from, let to) where entity == owner:
                if let value = local.values.removeValue(forKey: from) { local.values[to] = value }
                if local.cleared.remove(from) != nil { local.cleared.insert(to) }
                if let ids = local.related.removeValue(forKey: from) { local.related[to] = ids }
            case .property:
                break
            }
            if local != before { changed["local"] = .string(local.encoded()) }
        }
        return changed
    }
}
