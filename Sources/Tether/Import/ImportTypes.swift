import Foundation

/// How an import treats problems in the payload.
public struct ImportOptions: Sendable, Hashable {
    /// What to do when a value or an object is rejected.
    public enum Policy: Sendable, Hashable {
        /// Skip the value or object, report it in ``ImportResult/diagnostics`` and go on (the default).
        case report
        /// Abort the import with an ``ImportError``: nothing is written.
        case fail
    }

    /// How far values are converted to their attribute's type (``Coercion``).
    public enum Coercion: Sendable, Hashable {
        /// Lossless conversions are made, as RestKit and Sync make them: `"187"` → 187, `"131.3"`
        /// → 131.3, `"true"`/`"false"` → a bool, a number → a string attribute's text, `12.0` →
        /// 12. A lossy or ambiguous one (`"1.5"` → an integer, `"yes"` → a bool, out of range) is
        /// rejected and reported (the default).
        case lossless
        /// Only values of the attribute's own JSON type are taken (and integers written as exact
        /// numbers, `12.0`): `"187"` for an integer attribute is rejected and reported.
        case strict
    }

    /// What a rejected value or object does: `.report` (the default) skips it and lists it in
    /// ``ImportResult/diagnostics``; `.fail` aborts the import with an ``ImportError``, writing
    /// nothing.
    public var policy: Policy
    /// How values are converted; identities are read by the client's ``IdentityStrategy``,
    /// whose default takes `12345` and `"12345"` alike in either mode.
    public var coercion: Coercion = .lossless
    /// Top-level objects resolved against the store at a time (all batches are still one
    /// transaction). Each batch makes one identity lookup per entity and holds its objects'
    /// values until it is written, so memory grows with the batch, while time barely depends on
    /// it above a few thousand (Docs/Performance.md). Default: 10,000. The largest batch: an
    /// array read from bytes or a file starts with smaller ones (an eighth, a quarter, a half), so
    /// that writing starts early.
    public var batchSize: Int
    /// Inserts objects of the imported entity whose identity is not stored (Sync's `insert`); when
    /// false, such an object is ignored, as are links to it.
    public var insert = true
    /// Updates the attributes of stored objects of the imported entity (Sync's `update`); when
    /// false, a stored object keeps its attributes but is still the object the payload refers to:
    /// its links are set.
    public var update = true
    /// ``insert`` for nested objects (and objects named by id in the payload's arrays).
    public var insertRelationships = true
    /// ``update`` for nested objects.
    public var updateRelationships = true
    /// Deletes the children that a nested array of a one-to-many relationship no longer lists
    /// (Sync's `deleteRelationships`), instead of only unlinking them; a child mapped anywhere
    /// else in the payload is kept. Many-to-many relationships only ever unlink.
    public var deleteRelationships = false
    /// Deletes the objects of the imported entity inside this scope that the payload does not
    /// hold (Sync's `delete`, RestKit's orphan deletion): nil, the default, deletes nothing. See
    /// ``DeleteScope``.
    public var deleteMissing: DeleteScope?
    /// Payload objects that stand for deleted ones (`"deleted": true`): the stored object is
    /// deleted instead of updated, and a new one is not inserted.
    public var tombstones: [Tombstone] = []
    /// Receives the progress of the import (and of the fetch of its pages), batch by batch; see
    /// ``ProgressReporter``.
    public var progress: ProgressReporter?
    /// The most nested objects of one entity an import remembers across batches, so that an
    /// unchanged repeat is not looked up again; past it, it starts again from none. Internal:
    /// tests make it small.
    var rememberedLimit = 1 << 17

    /// Options that change only what is given; by default an import reports problems, converts
    /// losslessly, works in batches of 10,000 (a `batchSize` below 1 counts as 1), inserts and
    /// updates everything, and deletes nothing.
    ///
    /// ```swift
    /// ImportOptions(policy: .fail)                                   // all or nothing
    /// ImportOptions(update: false)                                   // insert what is new, keep the rest
    /// ImportOptions(deleteMissing: .all, tombstones: [Tombstone("deleted", equals: true)])
    /// ```
    public init(
        policy: Policy = .report, coercion: Coercion = .lossless, batchSize: Int = 10_000,
        insert: Bool = true, update: Bool = true, deleteMissing: DeleteScope? = nil,
        insertRelationships: Bool = true, updateRelationships: Bool = true, deleteRelationships: Bool = false,
        tombstones: [Tombstone] = [], progress: ProgressReporter? = nil
    ) {
        self.progress = progress
        self.policy = policy
        self.coercion = coercion
        self.batchSize = max(1, batchSize)
        self.insert = insert
        self.update = update
        self.deleteMissing = deleteMissing
        self.insertRelationships = insertRelationships
        self.updateRelationships = updateRelationships
        self.deleteRelationships = deleteRelationships
        self.tombstones = tombstones
    }
}

extension ImportOptions {
    /// These options for a payload of one object (a fetched, created or saved object): nothing
    /// is deleted for being missing from it.
    var single: ImportOptions {
        var options = self
        options.deleteMissing = nil
        return options
    }
}

/// Which stored objects an import with ``ImportOptions/deleteMissing`` may delete: those of the
/// imported entity inside the scope that the payload does not hold. Never anything outside it.
///
/// "Held" means mapped anywhere in the payload, nested occurrences included (an element skipped
/// for want of an identity is not held); an empty array deletes everything in scope. Deletion
/// runs in the import's transaction, after every batch (and every page of a fetch), with the
/// schema's delete rules; ``ImportResult/deleted`` lists what went.
///
/// ```swift
/// // The whole list, as the server has it:
/// try await client.import(data, as: "User", options: ImportOptions(deleteMissing: .all))
/// // A filtered list deletes only within its filter:
/// try await client.import(open, as: "Issue", options: ImportOptions(deleteMissing: .matching(.equal("state", "open"))))
/// // One user's repositories:
/// try await client.import(repos, as: "Repository", options: ImportOptions(deleteMissing: .related("repositories", of: user.id)))
/// // One repository's open issues (GET /repos/:full_name/issues?state=open): its closed ones stay.
/// try await client.import(open, as: "Issue", options: ImportOptions(deleteMissing: .relatedMatching("issues", of: repository.id, where: .equal("state", .string("open")))))
/// ```
public enum DeleteScope: Sendable, Hashable {
    /// Every stored object of the imported entity.
    case all
    /// The stored objects of the imported entity that match the condition.
    case matching(Condition)
    /// The objects linked to one object through one of its relationships (whose destination is
    /// the imported entity).
    case related(String, of: ObjectID)
    /// The objects linked to one object through one of its relationships that also match the
    /// condition: a filtered list of one parent's children ("this repository's open issues").
    case relatedMatching(String, of: ObjectID, where: Condition)
}

extension DeleteScope {
    /// The relationship and its owner, for the scopes that have one.
    var parent: (relationship: String, owner: ObjectID)? {
        switch self {
        case .related(let name, let owner), .relatedMatching(let name, let owner, _): (name, owner)
        case .all, .matching: nil
        }
    }

    /// The stored objects of `entity` within the scope (the scope's parent is known to exist).
    func objects(of entity: String, in reader: any StoreReader) throws -> [ObjectID] {
        switch self {
        case .all:
            return try reader.ids(Query(entity))
        case .matching(let condition):
            return try reader.ids(Query(entity, where: condition))
        case .related(let name, let owner):
            return try reader.related(name, of: owner)
        case .relatedMatching(let name, let owner, let condition):
            let linked = try reader.related(name, of: owner)
            guard !linked.isEmpty else { return [] }
            let matching = Set(try reader.ids(Query(entity, where: condition)))
            return linked.filter(matching.contains)
        }
    }
}

/// A payload object that says its object was deleted, such as `{"id": 7, "deleted": true}` or
/// `{"id": 7, "state": "removed"}`: the stored object is deleted (with the schema's delete
/// rules) instead of updated; one that is not stored is not inserted; links to it are dropped.
///
/// ```swift
/// ImportOptions(tombstones: [Tombstone("deleted", equals: true), Tombstone("state", in: ["removed", "spam"], entity: "Comment")])
/// ```
public struct Tombstone: Sendable, Hashable {
    /// The JSON key path read on the payload object (`deleted`, `meta.state`).
    public var keyPath: JSONKeyPath
    /// The values that mark a deleted object.
    public var values: [JSON]
    /// The entity whose objects it applies to; nil: the imported entity.
    public var entity: String?

    /// A tombstone marked by one value at `keyPath` (`Tombstone("deleted", equals: true)`), for
    /// `entity`'s objects, or the imported entity's when nil.
    public init(_ keyPath: JSONKeyPath, equals value: JSON, entity: String? = nil) {
        self.init(keyPath, in: [value], entity: entity)
    }

    /// A tombstone marked by any of `values` at `keyPath`
    /// (`Tombstone("state", in: ["removed", "spam"])`), for `entity`'s objects, or the imported
    /// entity's when nil.
    public init(_ keyPath: JSONKeyPath, in values: [JSON], entity: String? = nil) {
        self.keyPath = keyPath
        self.values = values
        self.entity = entity
    }
}

/// What an import did.
///
/// The id lists are ``ObjectIDList``s: runs of consecutive row ids, so that the result of a big
/// import stays small. They are random-access collections of ``ObjectID``; use `Array(_:)` where
/// an array is needed.
public struct ImportResult: Sendable {
    /// The top-level objects of the payload, in payload order; a repeated object appears once,
    /// where it first appeared.
    public var objects: ObjectIDList = []
    /// Objects created by this import, nested ones included, in payload order (where each first appeared).
    public var inserted: ObjectIDList = []
    /// Existing objects whose attributes or relationships changed.
    public var updated: ObjectIDList = []
    /// Existing objects the payload named that did not change.
    public var unchanged: ObjectIDList = []
    /// Objects deleted by this import: tombstones, objects missing from the payload within
    /// ``ImportOptions/deleteMissing``'s scope, children dropped under
    /// ``ImportOptions/deleteRelationships``, and what their delete rules took with them.
    public var deleted: [ObjectID] = []
    /// Every value or object that was not imported as given, and why.
    public var diagnostics: [ImportDiagnostic] = []

    /// An empty result: no objects, no diagnostics (a stub's answer in tests).
    public init() {}
}

/// One value or object that an import did not take as given.
public struct ImportDiagnostic: Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the value or object; compare with the static members (`.typeMismatch`, ...).
    public struct Problem: Hashable, Sendable, CustomStringConvertible {
        /// The problem's name, as its static member is spelled (`typeMismatch`).
        public let name: String
        /// A problem named `name`; imports report the static members.
        public init(_ name: String) { self.name = name }
        /// The JSON value has the wrong type for the attribute.
        public static let typeMismatch = Problem("typeMismatch")
        /// The value has the right JSON type but cannot be converted (a bad date, an integer out of range).
        public static let invalidValue = Problem("invalidValue")
        /// The object has no identity value (missing or null).
        public static let missingIdentity = Problem("missingIdentity")
        /// A top-level object carries its identity but none of the entity's other keys, while it
        /// has keys of its own: the payload is not in the shape the mapping reads (JSON:API's
        /// `attributes` read as plain JSON). The object is skipped; the message names its keys.
        public static let unmappedObject = Problem("unmappedObject")
        /// The value where an object or array of objects was expected is something else.
        public static let invalidRelationship = Problem("invalidRelationship")
        /// An id names an object that is not stored yet: not an error; the link is kept pending
        /// (``Action/linkPending``).
        public static let pendingReference = Problem("pendingReference")
        public var description: String { name }
    }

    /// What the import did about it; compare with the static members (`.valueSkipped`, ...).
    public struct Action: Hashable, Sendable, CustomStringConvertible {
        /// The action's name, as its static member is spelled (`valueSkipped`).
        public let name: String
        /// An action named `name`; imports report the static members.
        public init(_ name: String) { self.name = name }
        /// The value was not set; the stored value is unchanged.
        public static let valueSkipped = Action("valueSkipped")
        /// The whole object (and what is nested in it) was skipped.
        public static let objectSkipped = Action("objectSkipped")
        /// The link is kept in the store and made when an import brings the object it names.
        public static let linkPending = Action("linkPending")
        public var description: String { name }
    }

    /// Where in the payload, `$[3].owner.id`.
    public let path: JSONPath
    /// The entity of the object concerned.
    public let entity: String
    /// The attribute or relationship concerned, if any.
    public let attribute: String?
    /// What was wrong.
    public let problem: Problem
    /// What the import did about it.
    public let action: Action
    /// A sentence saying what was found and what was expected (`expected int64, found string "x"`).
    public let message: String

    /// A diagnostic with these values, as an import reports it.
    public init(path: JSONPath, entity: String, attribute: String?, problem: Problem, action: Action, message: String) {
        self.path = path
        self.entity = entity
        self.attribute = attribute
        self.problem = problem
        self.action = action
        self.message = message
    }

    public var description: String {
        "\(path): \(entity)\(attribute.map { ".\($0)" } ?? ""): \(message) (\(problem), \(action))"
    }
}

/// An import that was aborted: the payload has the wrong shape, or a problem occurred under
/// ``ImportOptions/Policy/fail``. Nothing was written.
public struct ImportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where in the payload (`$[3].owner.id`); `$` when the payload as a whole is at fault (not a
    /// list, an unknown entity, a response without the declared shape).
    public let path: JSONPath
    /// The entity being imported where it failed.
    public let entity: String
    /// The attribute or relationship concerned, if any.
    public let attribute: String?
    /// A sentence saying what was wrong.
    public let message: String

    /// An error at `path` of the payload.
    public init(path: JSONPath, entity: String, attribute: String? = nil, message: String) {
        self.path = path
        self.entity = entity
        self.attribute = attribute
        self.message = message
    }

    /// The error that `diagnostic` becomes under ``ImportOptions/Policy/fail``: same path, entity,
    /// attribute and message.
    public init(_ diagnostic: ImportDiagnostic) {
        self.init(path: diagnostic.path, entity: diagnostic.entity, attribute: diagnostic.attribute, message: diagnostic.message)
    }

    public var description: String {
        "import error at \(path) (\(entity)\(attribute.map { ".\($0)" } ?? "")): \(message)"
    }
}

/// Converts JSON values for `.transformable(name)` attributes, registered in the builder by name.
///
/// An import calls it on its mapping thread, and expects the same JSON to give the same value: an
/// object that repeats its text within an import is not converted again.
///
/// ```swift
/// struct CSVTransformer: AttributeTransformer {
///     func value(from json: JSON) throws -> Value { .string(json.arrayValue!.compactMap(\.stringValue).joined(separator: ",")) }
///     func json(from value: Value) -> JSON { ... }
/// }
/// builder.transformer(CSVTransformer(), named: "csv")
/// ```
public protocol AttributeTransformer: Sendable {
    /// Converts a JSON value (never null) to the stored value; throw to reject it.
    func value(from json: JSON) throws -> Value
    /// Converts a stored value back to JSON (for request bodies).
    func json(from value: Value) -> JSON
}

/// The lossless conversions of ``ImportOptions/Coercion/lossless``: a JSON value of another type
/// rewritten as the JSON type an attribute takes, or nil when no conversion keeps it exactly.
enum ValueCoercion {
    static func lossless(_ json: JSON, to type: AttributeType) -> JSON? {
        switch (type, json) {
        case (.int16, .string(let s)), (.int32, .string(let s)), (.int64, .string(let s)):
            return Int64(s).map(JSON.int)  // "1.5", " 12", "1e3" are not integers as written
        case (.double, .string(let s)), (.float, .string(let s)):
            guard isDecimalNumber(s), let d = Double(s), d.isFinite else { return nil }
            return .double(d)
        case (.bool, .string("true")): return .bool(true)
        case (.bool, .string("false")): return .bool(false)
        case (.string, .int(let i)): return .string(String(i))
        case (.string, .double(let d)): return d.isFinite ? .string("\(d)") : nil
        default: return nil
        }
    }

    /// A number as JSON writes one, optionally signed: `-12`, `131.3`, `1e-3`. Not `nan`,
    /// `inf`, hexadecimal, or with spaces.
    static func isDecimalNumber(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        var digits = false
        for (i, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits = true
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): break
            // a sign leads the number or its exponent
            case UInt8(ascii: "-"), UInt8(ascii: "+"): if i != 0 && bytes[i - 1] | 0x20 != UInt8(ascii: "e") { return false }
            default: return false
            }
        }
        return digits
    }
}
