public import Tether

/// JSON:API's recommended member names: camelCase model names and kebab-case JSON keys
/// (`createdAt` ↔ `created-at`, `avatarURL` ↔ `avatar-url`), plural kebab-case resource paths
/// (`BlogPost` → `blog-posts`, which are also the JSON:API types), `<key>-id` and
/// `<singular key>-ids` foreign keys.
///
/// ```swift
/// let naming = KebabCaseNaming(resourcePaths: ["Person": "people"])
/// naming.jsonKey(for: "createdAt", in: "Article")    // "created-at"
/// naming.modelName(for: "created-at", in: "Article") // "createdAt"
/// naming.resourcePath(for: "BlogPost")               // "blog-posts"
/// naming.resourcePath(for: "Person")                 // "people"
/// ```
///
/// The plural is English's regular one (`category` → `categories`, `box` → `boxes`) with a few
/// irregular words (`person` → `people`); name others in `resourcePaths`.
public struct KebabCaseNaming: NamingStrategy, Hashable {
    /// Per entity, a resource path (and JSON:API type) other than the derived plural.
    public var resourcePaths: [String: String]

    /// The kebab-case naming, with these resource paths instead of the derived plurals.
    public init(resourcePaths: [String: String] = [:]) {
        self.resourcePaths = resourcePaths
    }

    /// `createdAt` → `created-at`, `avatarURL` → `avatar-url`, `id` → `id`.
    public func jsonKey(for name: String, in entity: String) -> String { Self.kebab(name) }

    /// `created-at` → `createdAt`.
    public func modelName(for jsonKey: String, in entity: String) -> String {
        let words = jsonKey.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = words.first else { return jsonKey }
        return String(first) + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// `author-id` for a to-one `author`, `tag-ids` for a to-many `tags` (plain-JSON bodies
    /// only: JSON:API writes relationships as linkage).
    public func foreignKey(for relationship: Relationship, in entity: String) -> String {
        let key = jsonKey(for: relationship.name, in: entity)
        return relationship.isToMany ? Self.singular(key) + "-ids" : key + "-id"
    }

    /// The plural kebab-case name: `BlogPost` → `blog-posts`, unless ``resourcePaths`` names one.
    public func resourcePath(for entity: String) -> String {
        if let path = resourcePaths[entity] { return path }
        let kebab = Self.kebab(entity)
        guard let dash = kebab.lastIndex(of: "-") else { return Self.plural(kebab) }
        return kebab[...dash] + Self.plural(String(kebab[kebab.index(after: dash)...]))
    }

    /// `createdAt` → `created-at`; a run of capitals is one word (`avatarURL` → `avatar-url`,
    /// `URLPath` → `url-path`).
    static func kebab(_ name: String) -> String {
        let characters = Array(name)
        var result = ""
        for (i, c) in characters.enumerated() {
            if c.isUppercase {
                let previous = i > 0 ? characters[i - 1] : nil
                let next = i + 1 < characters.count ? characters[i + 1] : nil
                let startsWord = i > 0 && (previous.map { $0.isLowercase || $0.isNumber } == true
                    || (previous?.isUppercase == true && next?.isLowercase == true))
                if startsWord && result.last != "-" { result.append("-") }
                result.append(contentsOf: c.lowercased())
            } else if c == "_" {
                result.append("-")
            } else {
                result.append(c)
            }
        }
        return result
    }

    static let irregular: [String: String] = [
        "person": "people", "man": "men", "woman": "women", "child": "children", "mouse": "mice", "datum": "data",
        "series": "series", "news": "news", "information": "information", "equipment": "equipment", "media": "media",
    ]

    /// The regular English plural of a lower-case word.
    static func plural(_ word: String) -> String {
        if let irregular = irregular[word] { return irregular }
        if word.hasSuffix("y"), let before = word.dropLast().last, !"aeiou".contains(before) { return word.dropLast() + "ies" }
        for suffix in ["s", "x", "z", "ch", "sh"] where word.hasSuffix(suffix) { return word + "es" }
        return word + "s"
    }

    /// The singular of a plural made by `plural(_:)` (for foreign keys).
    static func singular(_ word: String) -> String {
        if let regular = irregular.first(where: { $0.value == word })?.key { return regular }
        if word.hasSuffix("ies") && word.count > 3 { return word.dropLast(3) + "y" }
        for suffix in ["ses", "xes", "zes", "ches", "shes"] where word.hasSuffix(suffix) { return String(word.dropLast(2)) }
        if word.hasSuffix("s") && !word.hasSuffix("ss") && word.count > 1 { return String(word.dropLast()) }
        return word
    }
}

extension NamingStrategy where Self == KebabCaseNaming {
    /// Kebab-case keys and plural kebab-case resource paths (``KebabCaseNaming``), JSON:API's
    /// recommended member names.
    public static var kebabCase: KebabCaseNaming { KebabCaseNaming() }
}
