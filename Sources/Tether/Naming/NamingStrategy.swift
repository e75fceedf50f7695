import Foundation

/// Protocol 1 of 6: how model names become JSON keys and resource paths, and back.
///
/// The import engine asks for the JSON key of every attribute and relationship once, when the
/// client is built, never per object.
///
/// ## Use a built-in one
/// ```swift
/// Client.Builder(schema: schema).naming(.verbatim)   // the default: names are JSON keys
/// Client.Builder(schema: schema).naming(.rails)      // TetherRails: createdAt <-> created_at
/// ```
///
/// ## Write your own
/// Implement the two key directions and the resource path; ``foreignKey(for:in:)`` has a
/// default. Conventions are values: carry configuration in stored properties, never globals.
/// ```swift
/// struct KebabCaseNaming: NamingStrategy {
///     func jsonKey(for name: String, in entity: String) -> String { /* createdAt -> created-at */ }
///     func modelName(for jsonKey: String, in entity: String) -> String { /* created-at -> createdAt */ }
///     func resourcePath(for entity: String) -> String { entity.lowercased() + "s" }
/// }
/// extension NamingStrategy where Self == KebabCaseNaming { static var kebabCase: Self { .init() } }
/// ```
public protocol NamingStrategy: Sendable {
    /// The JSON key of an attribute or relationship (`createdAt` -> `created_at`).
    func jsonKey(for name: String, in entity: String) -> String
    /// The model name of a JSON key (`created_at` -> `createdAt`); the inverse of ``jsonKey(for:in:)``.
    func modelName(for jsonKey: String, in entity: String) -> String
    /// The JSON key carrying a relationship as ids: `owner_id` for a to-one `owner`, `label_ids`
    /// for a to-many `labels`.
    func foreignKey(for relationship: Relationship, in entity: String) -> String
    /// The resource path segment of an entity (`Repository` -> `repositories`).
    func resourcePath(for entity: String) -> String
    /// Other JSON keys an import reads an attribute or relationship from when the payload lacks
    /// its own (``jsonKey(for:in:)``), first present wins. Empty by default; the Rails convention
    /// also reads the model's own camelCase name, as Sync does.
    func fallbackKeys(for name: String, in entity: String) -> [String]
}

extension NamingStrategy {
    public func fallbackKeys(for name: String, in entity: String) -> [String] { [] }

    /// `<key>_id` for to-one relationships, `<singular key>_ids` for to-many ones.
    public func foreignKey(for relationship: Relationship, in entity: String) -> String {
        let key = jsonKey(for: relationship.name, in: entity)
        guard relationship.isToMany else { return key + "_id" }
        return NaiveSingular.singular(key) + "_ids"
    }
}

/// A small English singulariser for default foreign keys (`repositories` -> `repository`).
/// Conventions with a real inflector (TetherRails) override ``NamingStrategy/foreignKey(for:in:)``.
enum NaiveSingular {
    static func singular(_ word: String) -> String {
        for (suffix, replacement) in [("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")]
        where word.hasSuffix(suffix) && word.count > suffix.count {
            return String(word.dropLast(suffix.count)) + replacement
        }
        if word.hasSuffix("s") && !word.hasSuffix("ss") && word.count > 1 { return String(word.dropLast()) }
        return word
    }
}

/// Names are used as they are: the attribute `avatarURL` is the JSON key `avatarURL`, and the
/// entity `User` has the resource path `User`.
public struct VerbatimNaming: NamingStrategy {
    /// The verbatim naming; ``NamingStrategy/verbatim`` says the same in a builder.
    public init() {}
    public func jsonKey(for name: String, in entity: String) -> String { name }
    public func modelName(for jsonKey: String, in entity: String) -> String { jsonKey }
    public func resourcePath(for entity: String) -> String { entity }
}

extension NamingStrategy where Self == VerbatimNaming {
    /// Names are JSON keys, as they are.
    public static var verbatim: VerbatimNaming { VerbatimNaming() }
}
