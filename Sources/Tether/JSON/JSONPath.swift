import Foundation

/// A location inside a JSON document, written the JSONPath way: `$[3].owner.id`.
public struct JSONPath: Hashable, Sendable, CustomStringConvertible {
    /// One step into a document: a member of an object or an element of an array.
    public enum Component: Hashable, Sendable {
        /// The member of an object with this key (`.owner`, or `["a key"]` when it is not a plain name).
        case key(String)
        /// The element of an array at this position, from 0 (`[3]`).
        case index(Int)
    }

    /// The steps from the document's root, outermost first; empty for the root itself.
    public var components: [Component]

    /// The location reached by following `components` from the root.
    public init(_ components: [Component] = []) { self.components = components }

    /// The document itself: `$`.
    public static let root = JSONPath()

    /// The location one step further in.
    public func appending(_ component: Component) -> JSONPath {
        JSONPath(components + [component])
    }

    /// The location of member `key` of the object here (`$[3]` -> `$[3].owner`).
    public func appending(key: String) -> JSONPath { appending(.key(key)) }
    /// The location of element `index` of the array here (`$` -> `$[3]`).
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
    /// The object keys to follow, outermost first (`["owner", "login"]`).
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
