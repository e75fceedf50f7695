public import Foundation

/// A URL with variables taken from an object: `/users/:login/repos`,
/// `/repos/:repository.full_name/issues`.
///
/// A variable is `:` followed by a JSON key path (letters, digits and `_`, components joined by
/// `.`). Each component is read through the entity's mapping, so `full_name` finds the attribute
/// `fullName` under a snake-case naming strategy; the components before the last follow to-one
/// relationships through the store (`repository.full_name` is the issue's repository's full
/// name). A component may also be a relationship's foreign key (`owner_id`), which yields the
/// related object's identity.
///
/// Every substituted value is percent-escaped as **one path segment** (unless its attribute is
/// declared a path, ``Client/Builder/pathAttribute(_:of:)``: GitHub's `full_name`
/// `octocat/Hello-World` is then two segments, each escaped): a value containing `/`,
/// `?`, `#`, spaces or non-ASCII cannot change the path or add a query, and the whole-segment
/// values `.` and `..` become `%2E` and `%2E%2E`. A missing or empty value is a
/// ``RequestError`` (``RequestError/Kind/missingValue``), thrown before anything is sent.
///
/// Relative templates are appended to the client's base URL; a template starting with
/// `http://` or `https://` is used as it is. A literal query (`/users?per_page=50`) is allowed.
/// Write `::` for a literal colon.
///
/// **A stored URL.** A template that starts with a variable whose value is a whole URL
/// (`http://` or `https://`, as servers give in `url` or `links.self` members) uses that value
/// as it is, not escaped, and appends the rest of the template: `:url` is the object's own URL,
/// `:url/comments` a URL under it. A client follows such a URL only on the scheme, host and port
/// of its base URL or on a host of ``RemoteConfiguration/pageHosts`` (the request hooks would
/// give any other host the client's credentials); another is a ``RequestError`` of kind
/// ``RequestError/Kind/untrustedLink`` and nothing is sent.
public struct URLTemplate: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// A piece of a template: text kept as written, or a variable filled in per object.
    public enum Part: Sendable, Hashable {
        /// Text kept as written (`/users/`; `::` already turned into `:`).
        case literal(String)
        /// A variable: the JSON key path after the colon (`repository.full_name`).
        case variable(JSONKeyPath)
    }

    /// The template's pieces, in order: `/users/:login/repos` is `/users/`, `login`, `/repos`.
    public let parts: [Part]
    /// The template as written.
    public let template: String

    /// Parses `template`. Nothing is checked here: `build()` checks registered templates against
    /// the mapping, and a call checks its values when it fills them in. A colon not followed by
    /// a letter or `_` (`http://`, `:8000`) is literal.
    public init(_ template: String) {
        self.template = template
        var parts: [Part] = []
        var literal = ""
        let chars = Array(template)
        var i = 0
        func isNameStart(_ c: Character) -> Bool { c.isASCII && (c.isLetter || c == "_") }
        func isName(_ c: Character) -> Bool { c.isASCII && (c.isLetter || c.isNumber || c == "_") }
        // A colon directly after the scheme or in a port (`http://`, `:8000`) is literal.
        while i < chars.count {
            let c = chars[i]
            if c == ":", i + 1 < chars.count, chars[i + 1] == ":" {
                literal.append(":")
                i += 2
                continue
            }
            if c == ":", i + 1 < chars.count, isNameStart(chars[i + 1]) {
                var components: [String] = []
                var j = i + 1
                while j < chars.count, isNameStart(chars[j]) {
                    var name = ""
                    while j < chars.count, isName(chars[j]) {
                        name.append(chars[j])
                        j += 1
                    }
                    components.append(name)
                    if j + 1 < chars.count, chars[j] == ".", isNameStart(chars[j + 1]) { j += 1 } else { break }
                }
                if !literal.isEmpty { parts.append(.literal(literal)) }
                literal = ""
                parts.append(.variable(JSONKeyPath(components: components)))
                i = j
                continue
            }
            literal.append(c)
            i += 1
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The variables, in order of appearance (`[login]` for `/users/:login/repos`).
    public var variables: [JSONKeyPath] {
        parts.compactMap { if case .variable(let v) = $0 { v } else { nil } }
    }

    /// True when the template starts with `http://` or `https://`, so the base URL is not used.
    public var isAbsolute: Bool {
        let lower = template.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    public var description: String { template }

    /// The template with `/:<identity key path>` appended: the URL of one object under a
    /// collection URL.
    func appendingSegment(_ part: Part) -> URLTemplate {
        var text = template
        var query = ""
        if let q = text.firstIndex(of: "?") {
            query = String(text[q...])
            text = String(text[..<q])
        }
        if !text.hasSuffix("/") { text += "/" }
        switch part {
        case .literal(let s): text += s.replacingOccurrences(of: ":", with: "::")
        case .variable(let path): text += ":" + path.description
        }
        return URLTemplate(text + query)
    }

    /// Percent-escapes `value` as exactly one path segment: only unreserved characters
    /// (`A–Z a–z 0–9 - . _ ~`) stay; `.` and `..` as a whole segment are escaped too.
    public static func escapeSegment(_ value: String) -> String {
        if value == "." { return "%2E" }
        if value == ".." { return "%2E%2E" }
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return out
    }

    /// Builds the URL from already-known variable values (each escaped as one segment; those of
    /// `paths` as `/`-separated segments, each escaped, none empty, `.` or `..`).
    public func url(baseURL: URL?, values: [JSONKeyPath: String], paths: Set<JSONKeyPath> = []) throws(RequestError) -> URL {
        var text = ""
        for (index, part) in parts.enumerated() {
            switch part {
            case .literal(let s): text += s
            case .variable(let path):
                guard let value = values[path], !value.isEmpty else {
                    throw RequestError(.missingValue, member: path.description, "the URL template '\(template)' needs a value for ':\(path)'")
                }
                if index == 0, Self.isAbsolute(value) {
                    text += value  // a stored URL, used as it is
                    continue
                }
                text += paths.contains(path) ? try Self.escapePath(value, variable: path, template: template) : Self.escapeSegment(value)
            }
        }
        return try Self.resolve(text, baseURL: baseURL, template: template)
    }

    /// Percent-escapes `value` as `/`-separated path segments (GitHub's `octocat/Hello-World`),
    /// each as ``escapeSegment(_:)`` escapes one; an empty, `.` or `..` segment is refused, so the
    /// value cannot climb out of the template's path.
    static func escapePath(_ value: String, variable: JSONKeyPath, template: String) throws(RequestError) -> String {
        let segments = value.split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments where segment.isEmpty || segment == "." || segment == ".." {
            throw RequestError(.missingValue, member: variable.description,
                               "the value of ':\(variable)' in '\(template)' has an empty, '.' or '..' path segment: '\(value)'; nothing was sent")
        }
        return segments.map { escapeSegment(String($0)) }.joined(separator: "/")
    }

    /// Whether `text` is a whole `http` or `https` URL.
    static func isAbsolute(_ text: String) -> Bool {
        let lower = text.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// The stored URL this template starts with for `values` (its first part is a variable whose
    /// value is a whole URL), or nil.
    func storedURLPrefix(values: [JSONKeyPath: String]) -> String? {
        guard case .variable(let first)? = parts.first, let value = values[first], Self.isAbsolute(value) else { return nil }
        return value
    }

    static func resolve(_ path: String, baseURL: URL?, template: String) throws(RequestError) -> URL {
        if isAbsolute(path) {
            guard let url = URL(string: path) else {
                throw RequestError(.invalidURL, "the URL template '\(template)' gives an invalid URL '\(path)'")
            }
            return url
        }
        guard let baseURL else {
            throw RequestError(.invalidURL, "the URL template '\(template)' is relative and the client has no base URL")
        }
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let joined = base + (path.hasPrefix("/") || path.hasPrefix("?") ? path : "/" + path)
        guard let url = URL(string: joined) else {
            throw RequestError(.invalidURL, "the URL template '\(template)' gives an invalid URL '\(joined)'")
        }
        return url
    }
}

/// What a URL template is evaluated against: an entity's values and relationships, stored or not.
struct TemplateSubject: Sendable {
    var entity: String
    var values: [String: Value]
    /// The stored object, to follow relationships through the store.
    var id: ObjectID?
    /// Relationship targets known before the object is stored (they win over the store).
    var related: [String: [ObjectID]] = [:]

    init(entity: String, values: [String: Value], id: ObjectID? = nil, related: [String: [ObjectID]] = [:]) {
        self.entity = entity
        self.values = values
        self.id = id
        self.related = related
    }

    init(_ object: Object) { self.init(entity: object.entity, values: object.values, id: object.id) }
}

/// Evaluates templates against the mapping. Pure; used inside a store read.
struct TemplateEvaluator {
    let mapping: Mapping
    let naming: any NamingStrategy
    let dateDecoding: DateDecoding
    let transformers: [String: any AttributeTransformer]
    /// Per entity: the attributes whose values are paths of several segments.
    var pathAttributes: [String: Set<String>] = [:]
    /// Where a stored URL may lead (``URLTemplate``, *A stored URL*): the base URL's origin, and
    /// hosts of the same scheme in ``RemoteConfiguration/pageHosts``.
    var baseURL: URL?
    var pageHosts: Set<String> = []

    init(client: Client) {
        mapping = client.mapping
        naming = client.naming
        dateDecoding = client.dateDecoding
        transformers = client.transformers
        pathAttributes = client.remote.pathAttributes
        baseURL = client.baseURL
        pageHosts = client.remote.pageHosts
    }

    enum Step {
        case attribute(AttributeMapping)
        /// A to-one relationship to follow.
        case relationship(RelationshipMapping)
        /// A relationship's foreign key: the identity of the related object.
        case foreignKey(RelationshipMapping)
    }

    /// Resolves a variable to steps through the mapping (no store access).
    func steps(for path: JSONKeyPath, from entityName: String, template: URLTemplate) throws(RequestError) -> [Step] {
        var steps: [Step] = []
        var entity = entityName
        var rest = path.components[...]
        while !rest.isEmpty {
            guard let mapping = mapping[entity] else {
                throw RequestError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
            }
            // The whole remaining path may be one attribute's key path (`owner.login`).
            if rest.count > 1, let name = mapping.property(forKeyPath: JSONKeyPath(components: Array(rest))),
                let attribute = mapping.attribute(name)
            {
                steps.append(.attribute(attribute))
                return steps
            }
            let component = rest.removeFirst()
            let key = JSONKeyPath(components: [component])
            let name = mapping.property(forKeyPath: key) ?? naming.modelName(for: component, in: entity)
            if let attribute = mapping.attribute(name) ?? mapping.attribute(component) {
                guard rest.isEmpty else {
                    throw RequestError(.unknownVariable, entity: entity, member: path.description,
                        "':\(path)' in '\(template)': \(entity).\(attribute.name) is an attribute, not a relationship to follow")
                }
                steps.append(.attribute(attribute))
            } else if let relationship = mapping.relationship(name) ?? mapping.relationship(component) {
                guard !relationship.relationship.isToMany else {
                    throw RequestError(.unknownVariable, entity: entity, member: path.description,
                        "':\(path)' in '\(template)': \(entity).\(relationship.name) is to-many; only to-one relationships can be followed")
                }
                if rest.isEmpty {
                    try checkSingleIdentity(relationship, of: entity, path, template)
                    steps.append(.foreignKey(relationship))
                } else {
                    steps.append(.relationship(relationship))
                    entity = relationship.relationship.destination
                }
            } else if rest.isEmpty, let relationship = mapping.relationships.first(where: { $0.foreignKey == component && !$0.relationship.isToMany }) {
                try checkSingleIdentity(relationship, of: entity, path, template)
                steps.append(.foreignKey(relationship))
            } else {
                throw RequestError(.unknownVariable, entity: entity, member: path.description,
                    "':\(path)' in '\(template)': '\(component)' is not an attribute, to-one relationship or foreign key of \(entity)")
            }
        }
        return steps
    }

    /// Refuses a variable that stands for a related object's identity (`:repository`,
    /// `:repository_id`) when that identity is composite: one variable is one value, so the
    /// template must name each identity attribute (`:repository.owner/:repository.name`).
    private func checkSingleIdentity(
        _ relationship: RelationshipMapping, of entity: String, _ path: JSONKeyPath, _ template: URLTemplate
    ) throws(RequestError) {
        let destination = relationship.relationship.destination
        guard let identity = mapping[destination]?.identity, identity.count > 1 else { return }
        let prefix = (path.components.dropLast() + relationship.keyPath.components).joined(separator: ".")
        let names = identity.map { ":\(prefix).\($0.keyPath)" }
        throw RequestError(.unknownVariable, entity: entity, member: path.description,
            "':\(path)' in '\(template)': \(destination) is identified by \(identity.count) attributes (\(identity.map(\.name).joined(separator: ", "))), "
                + "which one variable cannot hold; name each of them: \(names.joined(separator: "/"))")
    }

    /// Checks that every variable of `template` resolves from `entity` (used at build time).
    func validate(_ template: URLTemplate, for entity: String) throws(RequestError) {
        for variable in template.variables { _ = try steps(for: variable, from: entity, template: template) }
    }

    /// The URL of `template` for `subject`, reading related objects from `reader`.
    func url(_ template: URLTemplate, for subject: TemplateSubject?, baseURL: URL?, reader: any StoreReader) throws -> URL {
        var values: [JSONKeyPath: String] = [:]
        var paths: Set<JSONKeyPath> = []
        for variable in template.variables {
            guard let subject else {
                throw RequestError(.missingValue, member: variable.description,
                    "the URL template '\(template)' needs ':\(variable)', but no object was given")
            }
            let (text, isPath) = try value(of: variable, in: subject, template: template, reader: reader)
            values[variable] = text
            if isPath { paths.insert(variable) }
        }
        let url = try template.url(baseURL: baseURL, values: values, paths: paths)
        try Self.checkStoredURL(url, template: template, values: values, entity: subject?.entity, baseURL: baseURL, pageHosts: pageHosts)
        return url
    }

    /// Refuses `url` when `template` starts with a stored URL (``URLTemplate``, *A stored URL*)
    /// that leaves the base URL's scheme, host and port for a host not in `pageHosts`: the
    /// request hooks would give it the client's credentials.
    static func checkStoredURL(
        _ url: URL, template: URLTemplate, values: [JSONKeyPath: String], entity: String?, baseURL: URL?, pageHosts: Set<String>
    ) throws(RequestError) {
        guard let stored = template.storedURLPrefix(values: values) else { return }
        let target = Client.origin(url)
        if let baseURL {
            let base = Client.origin(baseURL)
            if base.scheme == target.scheme, base.host == target.host, base.port == target.port { return }
            if base.scheme == target.scheme, pageHosts.contains(target.host) { return }
        } else if pageHosts.contains(target.host) {
            return
        }
        throw RequestError(
            .untrustedLink, entity: entity,
            "the URL template '\(template)' starts with a stored URL, \(RemoteURL.redacted(URL(string: stored) ?? url).absoluteString), on "
                + "\(target.scheme)://\(target.host)\(target.port.map { ":\($0)" } ?? ""), not on the base URL's scheme, host and port; "
                + "Tether follows stored URLs only there (or on a host of the builder's pageHosts(_:)), so that no credentials go elsewhere; nothing was sent")
    }

    /// The text of a variable, and whether it is a path of several segments (an attribute
    /// declared with ``Client/Builder/pathAttribute(_:of:)``).
    private func value(of variable: JSONKeyPath, in subject: TemplateSubject, template: URLTemplate, reader: any StoreReader) throws -> (String, Bool) {
        let steps = try steps(for: variable, from: subject.entity, template: template)
        var values = subject.values
        var id = subject.id
        var related = subject.related
        var entity = subject.entity
        func missing(_ why: String) -> RequestError {
            RequestError(.missingValue, entity: subject.entity, member: variable.description,
                         "the URL template '\(template)' needs ':\(variable)' of \(subject.entity), but \(why); nothing was sent")
        }
        func follow(_ relationship: RelationshipMapping) throws -> Object? {
            let targets: [ObjectID]
            if let known = related[relationship.name] {
                targets = known
            } else if let id {
                targets = try reader.related(relationship.name, of: id)
            } else {
                targets = []
            }
            guard let target = targets.first else { return nil }
            return try reader.object(target)
        }
        for step in steps {
            switch step {
            case .attribute(let attribute):
                guard let value = values[attribute.name] else { throw missing("\(entity).\(attribute.name) is not set") }
                let text = string(value, attribute)
                if text.isEmpty { throw missing("\(entity).\(attribute.name) is empty") }
                return (text, pathAttributes[entity]?.contains(attribute.name) == true)
            case .relationship(let relationship):
                guard let object = try follow(relationship) else { throw missing("\(entity).\(relationship.name) links no object") }
                values = object.values
                id = object.id
                related = [:]
                entity = object.entity
            case .foreignKey(let relationship):
                guard let object = try follow(relationship) else { throw missing("\(entity).\(relationship.name) links no object") }
                guard let destination = mapping[object.entity], destination.identity.count == 1,
                    let value = object.values[destination.identity[0].name]
                else { throw missing("\(entity).\(relationship.name) links an object without an identity") }
                return (string(value, destination.identity[0]), false)
            }
        }
        throw missing("the variable is empty")
    }

    /// The text of a value of `attribute` in a URL: dates by the attribute's own formats, else the client's.
    func string(_ value: Value, _ attribute: AttributeMapping) -> String {
        switch JSONExport.json(value, attribute.attribute, dateDecoding: attribute.dateDecoding ?? dateDecoding, transformers: transformers) {
        case .string(let s): return s
        case .null: return ""
        case let other: return other.description
        }
    }
}
