import Foundation

/// A builder that cannot produce a working client; thrown by ``Client/Builder/build()``.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public static let unknownEntity = Kind("unknownEntity")
        public static let unknownProperty = Kind("unknownProperty")
        public static let missingTransformer = Kind("missingTransformer")
        public static let invalidIdentity = Kind("invalidIdentity")
        public static let invalidRoute = Kind("invalidRoute")
        public static let invalidURL = Kind("invalidURL")
        public static let conflictingKeys = Kind("conflictingKeys")
        public static let schema = Kind("schema")
        public static let store = Kind("store")
        public var description: String { name }
    }

    public let kind: Kind
    public let entity: String?
    public let member: String?
    public let message: String

    public init(_ kind: Kind, entity: String? = nil, member: String? = nil, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.member = member
        self.message = message
    }

    public var description: String { "configuration error (\(kind)): \(message)" }
}
