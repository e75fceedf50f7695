import Foundation

/// A location inside a JSON document, written the JSONPath way: `$[3].owner.id`.
public struct JSONPath: Hashable, Sendable, CustomStringConvertible {
    public enum Component: Hashable, Sendable {
        case key(String)
        case index(Int)
    }

    public var components: [Component]

    public init(_ components: [Component] = []) { self.components = components }

    public static let root = JSONPath()

    public func appending(_ component: Component) -> JSONPath {
        JSONPath(components + [component])
    }

    public func appending(key: String) -> JSONPath { appending(.key(key)) }
    public func appending(index: Int) -> JSONPath { appending(.index(index)) }

    public var description: String {
        var text = "$"
        for component in components {
            switch component {
            case .key(let key):
                if !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
                    text += ".\(key)"
                } else {
                    text += "[\"\(key)\"]"
                }
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }
}

/// A dotted path of object keys in a JSON document, such as `owner.login`.
///
/// Key mappings use it to read an attribute from a nested object.
public struct JSONKeyPath: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var components: [String]

    /// Splits `owner.login` at the dots.
    public init(_ dotted: String) {
        components = dotted.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    /// A key path from explicit components; use it for keys that contain a dot.
    public init(components: [String]) { self.components = components }

    public init(stringLiteral value: String) { self.init(value) }

    public var description: String { components.joined(separator: ".") }

    /// True when the path is one plain key.
    public var isSingleKey: Bool { components.count == 1 }
}
