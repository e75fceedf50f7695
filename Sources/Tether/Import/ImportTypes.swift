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

    public var policy: Policy
    /// Top-level objects resolved against the store at a time (all batches are still one
    /// transaction). Each batch makes one identity lookup per entity and holds its objects'
    /// values until it is written, so memory grows with the batch, while time barely depends on
    /// it above a few thousand (Docs/Performance.md). Default: 10,000. The largest batch: an
    /// array read from bytes or a file starts with smaller ones (an eighth, a quarter, a half), so
    /// that writing starts early.
    public var batchSize: Int
    /// The most nested objects of one entity an import remembers across batches, so that an
    /// unchanged repeat is not looked up again; past it, it starts again from none. Internal:
    /// tests make it small.
    var rememberedLimit = 1 << 17

    public init(policy: Policy = .report, batchSize: Int = 10_000) {
        self.policy = policy
        self.batchSize = max(1, batchSize)
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
    /// Every value or object that was not imported as given, and why.
    public var diagnostics: [ImportDiagnostic] = []

    public init() {}
}

/// One value or object that an import did not take as given.
public struct ImportDiagnostic: Sendable, Hashable, CustomStringConvertible {
    public struct Problem: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        /// The JSON value has the wrong type for the attribute.
        public static let typeMismatch = Problem("typeMismatch")
        /// The value has the right JSON type but cannot be converted (a bad date, an integer out of range).
        public static let invalidValue = Problem("invalidValue")
        /// The object has no identity value (missing or null).
        public static let missingIdentity = Problem("missingIdentity")
        /// The value where an object or array of objects was expected is something else.
        public static let invalidRelationship = Problem("invalidRelationship")
        public var description: String { name }
    }

    public struct Action: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        /// The value was not set; the stored value is unchanged.
        public static let valueSkipped = Action("valueSkipped")
        /// The whole object (and what is nested in it) was skipped.
        public static let objectSkipped = Action("objectSkipped")
        public var description: String { name }
    }

    /// Where in the payload, `$[3].owner.id`.
    public let path: JSONPath
    public let entity: String
    /// The attribute or relationship concerned, if any.
    public let attribute: String?
    public let problem: Problem
    public let action: Action
    public let message: String

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
    public let path: JSONPath
    public let entity: String
    public let attribute: String?
    public let message: String

    public init(path: JSONPath, entity: String, attribute: String? = nil, message: String) {
        self.path = path
        self.entity = entity
        self.attribute = attribute
        self.message = message
    }

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
