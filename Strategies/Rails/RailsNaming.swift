public import Tether

/// The Rails convention (SLRESTfulCoreData, CTRESTfulCoreData): camelCase model names and
/// snake_case JSON keys, plural snake_case resource paths, `<name>_id` / `<singular>_ids`
/// foreign keys.
///
/// ```swift
/// let naming = RailsNaming.rails(conventions: ["identifier": "id", "URL": "url"])
/// naming.jsonKey(for: "createdAt", in: "User")            // "created_at"
/// naming.modelName(for: "gravatar_id", in: "User")        // "gravatarIdentifier"
/// naming.modelName(for: "html_url", in: "Repository")     // "htmlURL"
/// naming.resourcePath(for: "PullRequest")                 // "pull_requests"
/// naming.modelKeyPath(for: ":repository.full_name")       // ":repository.fullName"
/// ```
///
/// ## Conventions
/// A convention pairs a model word with a JSON word and applies *inside* names, in both
/// directions: with `identifier` <-> `id`, `gravatar_id` is `gravatarIdentifier` and
/// `some_id_value` is `someIdentifierValue`. A model word written in capitals (`URL`) is an
/// acronym: it stays in capitals inside a name (`avatarURL`) and is lower-cased at the start of
/// one (`url`), as the Swift API guidelines ask. Conventions are stored in the value; there is
/// no global registry.
///
/// ## Round trips
/// For a snake_case key made of lower-case words (`[a-z][a-z0-9]*` separated by single
/// underscores, leading and trailing underscores allowed), snake -> camel -> snake gives the key
/// back, except when a word starts with a digit (`x_1` -> `x1` -> `x1`) or, with conventions,
/// when the key contains a *model* word of a convention (`identifier` -> `identifier` -> `id`).
///
/// Per-entity exceptions (`repositoryDescription` <-> `description`) are key mappings:
/// `builder.keyMapping(KeyOverrides(["Repository": ["repositoryDescription": "description"]]))`,
/// checked against the schema at `build()`.
public struct RailsNaming: NamingStrategy, Hashable {
    /// A model word and the JSON word it stands for (`identifier` <-> `id`, `URL` <-> `url`).
    public struct Convention: Sendable, Hashable {
        /// The word in model names: `identifier`, or an acronym in capitals such as `URL`.
        public let modelWord: String
        /// The word (or `_`-separated words) in JSON keys: `id`, `url`.
        public let jsonWord: String

        /// A convention translating `modelWord` in model names into `jsonWord` in JSON keys, and back
        /// (`Convention(model: "URL", json: "url")`).
        public init(model modelWord: String, json jsonWord: String) {
            self.modelWord = modelWord
            self.jsonWord = jsonWord
        }

        var jsonWords: [Substring] { jsonWord.split(separator: "_") }
        var isAcronym: Bool { modelWord.allSatisfy { !$0.isLowercase } }
        /// The model word at the start of a name: `url`, `identifier`.
        var leadingForm: String {
            isAcronym ? modelWord.lowercased() : modelWord.prefix(1).lowercased() + modelWord.dropFirst()
        }
        /// The model word inside a name: `URL`, `Identifier`.
        var innerForm: String { modelWord.prefix(1).uppercased() + modelWord.dropFirst() }
    }

    /// The registered conventions, sorted by model word: the same conventions make equal namings,
    /// whether they came as a dictionary or one by one.
    public private(set) var conventions: [Convention] = []
    /// Pluralises entity names into resource paths and singularises to-many relationship names
    /// into foreign keys.
    public var inflector: Inflector

    /// Rails naming with these conventions (model words written differently in JSON).
    ///
    /// - Parameters:
    ///   - conventions: model word -> JSON word, such as `["identifier": "id", "URL": "url"]`.
    ///   - inflector: the plural rules; ActiveSupport's English ones by default.
    public init(conventions: [String: String] = [:], inflector: Inflector = .english) {
        self.inflector = inflector
        for (model, json) in conventions.sorted(by: { $0.key < $1.key }) {
            self.conventions.append(Convention(model: model, json: json))
        }
    }

    /// A copy with one more convention: `RailsNaming().convention("identifier", json: "id")`.
    /// A convention for the same model word or JSON word replaces the earlier one.
    public func convention(_ modelWord: String, json jsonWord: String) -> RailsNaming {
        var copy = self
        copy.conventions.removeAll { $0.modelWord == modelWord || $0.jsonWord == jsonWord }
        let convention = Convention(model: modelWord, json: jsonWord)
        copy.conventions.insert(convention, at: copy.conventions.firstIndex { $0.modelWord > modelWord } ?? copy.conventions.endIndex)
        return copy
    }

    /// A copy that uses `inflector` for resource paths and foreign keys.
    public func inflector(_ inflector: Inflector) -> RailsNaming {
        var copy = self
        copy.inflector = inflector
        return copy
    }

    // MARK: NamingStrategy

    /// `createdAt` -> `created_at`; with `URL` <-> `url`, `avatarURL` -> `avatar_url`.
    public func jsonKey(for name: String, in entity: String) -> String {
        CaseConversion.snakeCase(name, conventions: conventions)
    }

    /// `created_at` -> `createdAt`; with `identifier` <-> `id`, `gravatar_id` -> `gravatarIdentifier`.
    public func modelName(for jsonKey: String, in entity: String) -> String {
        CaseConversion.camelCase(jsonKey, conventions: conventions)
    }

    /// The model's own name (`createdAt`), read by an import when a payload lacks the snake_case
    /// key (`created_at`), as Sync does.
    public func fallbackKeys(for name: String, in entity: String) -> [String] {
        jsonKey(for: name, in: entity) == name ? [] : [name]
    }

    /// `owner_id` for a to-one `owner`; `label_ids` for a to-many `labels`, `person_ids` for `people`.
    public func foreignKey(for relationship: Relationship, in entity: String) -> String {
        let key = jsonKey(for: relationship.name, in: entity)
        return relationship.isToMany ? inflector.singularize(key) + "_ids" : key + "_id"
    }

    /// The plural snake_case of the entity name: `Issue` -> `issues`, `Person` -> `people`,
    /// `PullRequest` -> `pull_requests`. Conventions do not apply to entity names.
    public func resourcePath(for entity: String) -> String {
        inflector.pluralize(CaseConversion.snakeCase(entity, conventions: []))
    }

    // MARK: Beyond the protocol

    /// The entity name of a resource path: `pull_requests` -> `PullRequest`, `people` -> `Person`.
    public func entityName(forResourcePath path: String) -> String {
        let camel = CaseConversion.camelCase(inflector.singularize(path), conventions: [])
        return camel.prefix(1).uppercased() + camel.dropFirst()
    }

    /// Translates a dotted JSON key path into a model key path, one component at a time:
    /// `repository.full_name` -> `repository.fullName`. A leading `:` (a URL template variable)
    /// is kept: `:repository.full_name` -> `:repository.fullName`.
    public func modelKeyPath(for jsonKeyPath: String) -> String {
        mapKeyPath(jsonKeyPath) { modelName(for: $0, in: "") }
    }

    /// Translates a dotted model key path into a JSON key path: `repository.fullName` ->
    /// `repository.full_name`. A leading `:` is kept.
    public func jsonKeyPath(for modelKeyPath: String) -> String {
        mapKeyPath(modelKeyPath) { jsonKey(for: $0, in: "") }
    }

    /// The identity strategy that goes with this naming: objects are identified by the model
    /// name of the JSON key `id` (`identifier` when `identifier` <-> `id` is registered, `id`
    /// otherwise), unless the schema or `overrides` say otherwise.
    ///
    /// ```swift
    /// builder.identity(naming.identity(overrides: ["Issue": ["number"]]))
    /// ```
    public func identity(overrides: [String: [String]] = [:]) -> AttributeIdentity {
        AttributeIdentity(modelName(for: "id", in: ""), overrides: overrides)
    }

    private func mapKeyPath(_ path: String, _ transform: (String) -> String) -> String {
        let colon = path.hasPrefix(":")
        let body = colon ? path.dropFirst() : Substring(path)
        let mapped = body.split(separator: ".", omittingEmptySubsequences: false).map { transform(String($0)) }
        return (colon ? ":" : "") + mapped.joined(separator: ".")
    }
}

extension NamingStrategy where Self == RailsNaming {
    /// The Rails convention with no registered conventions: `createdAt` <-> `created_at`,
    /// `Repository` -> `repositories`.
    public static var rails: RailsNaming { RailsNaming() }

    /// The Rails convention with conventions, model word -> JSON word:
    /// `.rails(conventions: ["identifier": "id", "URL": "url"])`.
    public static func rails(conventions: [String: String], inflector: Inflector = .english) -> RailsNaming {
        RailsNaming(conventions: conventions, inflector: inflector)
    }
}

extension Client.Builder {
    /// Rails naming and the identity that goes with it, in one call.
    ///
    /// ```swift
    /// Client.Builder(schema: schema)
    ///     .rails(conventions: ["identifier": "id", "URL": "url"], identity: ["Issue": ["number"]])
    /// ```
    /// is `.naming(naming).identity(naming.identity(overrides: identity))`.
    public func rails(conventions: [String: String] = [:], identity overrides: [String: [String]] = [:]) -> Self {
        rails(RailsNaming(conventions: conventions), identity: overrides)
    }

    /// Uses `naming` and its identity (see ``RailsNaming/identity(overrides:)``).
    public func rails(_ naming: RailsNaming, identity overrides: [String: [String]] = [:]) -> Self {
        self.naming(naming).identity(naming.identity(overrides: overrides))
    }
}
