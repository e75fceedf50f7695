import Foundation

extension TetherBookkeeping {
    /// Tether's entities of pending references, each with the attributes that name entities or
    /// relationships (``pendingRecord(of:_:renaming:)``).
    package static let pendingNamingAttributes: [(entity: String, attributes: [String])] = [
        (PendingReferences.targetEntityName, ["key", "references"]),
        (PendingReferences.sourceEntityName, ["key", "targets"]),
        (PendingReferences.legacyEntityName, ["sourceEntity", "relationship", "targetEntity"]),
    ]

    /// The values of a stored object of `entity` (one of ``pendingNamingAttributes``' entities,
    /// with those attributes) that `rename` changes, with their new values; empty when it names
    /// nothing renamed.
    package static func pendingRecord(of entity: String, _ values: [String: Value], renaming rename: Rename) throws -> [String: Value] {
        var changed: [String: Value] = [:]
        func text(_ name: String) -> String? {
            if case .string(let value)? = values[name] { return value }
            return nil
        }
        func entries(_ name: String) throws -> [[String]]? {
            guard let text = text(name) else { return nil }
            do {
                return try JSONDecoder().decode([[String]].self, from: Data(text.utf8))
            } catch {
                throw StoreError(.storage, entity: entity, member: name, "a pending reference cannot be read: \(text)")
            }
        }
        func set(_ name: String, _ entries: [[String]], was old: [[String]]) throws {
            guard entries != old else { return }
            changed[name] = .string(String(decoding: try JSONEncoder().encode(entries), as: UTF8.self))
        }
        /// "Entity␟…" with the entity renamed.
        func renamingPrefix(_ key: String, _ from: String, _ to: String) -> String {
            key.hasPrefix(from + "\u{1F}") ? to + key.dropFirst(from.count) : key
        }
        switch entity {
        case PendingReferences.targetEntityName:
            // key: the target's entity and identity; references: [source entity, row, relationship, position].
            if case .entity(let from, let to) = rename, let key = text("key"), renamingPrefix(key, from, to) != key {
                changed["key"] = .string(renamingPrefix(key, from, to))
            }
            if let old = try entries("references") {
                try set("references", old.map { entry in
                    guard entry.count == 4 else { return entry }
                    var entry = entry
                    switch rename {
                    case .entity(let from, let to): if entry[0] == from { entry[0] = to }
                    case .property(let owner, let from, let to): if entry[0] == owner && entry[2] == from { entry[2] = to }
                    }
                    return entry
                }, was: old)
            }
        case PendingReferences.sourceEntityName:
            // key: the source's entity, row and relationship; targets: [target key].
            if let key = text("key") {
                var parts = key.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
                if parts.count == 3 {
                    switch rename {
                    case .entity(let from, let to): if parts[0] == from { parts[0] = to }
                    case .property(let owner, let from, let to): if parts[0] == owner && parts[2] == from { parts[2] = to }
                    }
                }
                let renamed = parts.joined(separator: "\u{1F}")
                if renamed != key { changed["key"] = .string(renamed) }
            }
            if case .entity(let from, let to) = rename, let old = try entries("targets") {
                try set("targets", old.map { $0.map { renamingPrefix($0, from, to) } }, was: old)
            }
        case PendingReferences.legacyEntityName:
            switch rename {
            case .entity(let from, let to):
                if text("sourceEntity") == from { changed["sourceEntity"] = .string(to) }
                if text("targetEntity") == from { changed["targetEntity"] = .string(to) }
            case .property(let owner, let from, let to):
                if text("sourceEntity") == owner && text("relationship") == from { changed["relationship"] = .string(to) }
            }
        default:
            break
        }
        return changed
    }
}
