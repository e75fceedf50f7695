import Foundation

/// Protocol 3 of 6: which attributes identify an entity, and how an identity value is read
/// from JSON.
///
/// The store keeps exactly one object per identity per entity; an import finds the existing
/// object by identity or creates one.
///
/// ## Use a built-in one
/// ```swift
/// builder.identity(.attribute("id"))                                  // the default
/// builder.identity(.attribute("identifier", overrides: ["Issue": ["number"]]))
/// ```
/// An entity that declares an identity in the schema keeps it (unless an override names the
/// entity); the strategy fills the rest. An entity declared with `identity: []`
/// (``Entity/declaresNoIdentity``) has none, and the strategy is not asked.
///
/// ## Write your own
/// Implement ``identityAttributes(for:)``; override ``identityValue(from:for:)`` to normalise
/// values (say, lower-casing logins). The default reads `12345` and `"12345"` as the same id.
public protocol IdentityStrategy: Sendable {
    /// The attributes identifying objects of `entity`; empty means objects of this entity have no
    /// identity and an import always inserts them.
    func identityAttributes(for entity: Entity) -> [String]
    /// The identity value of `json` for `attribute`, or nil when it is missing, null or unusable.
    func identityValue(from json: JSON, for attribute: Attribute) -> Value?
}

extension IdentityStrategy {
    public func identityValue(from json: JSON, for attribute: Attribute) -> Value? {
        IdentityCoercion.value(from: json, for: attribute.type)
    }
}

/// A per-entity override when there is one; otherwise the identity the entity declares; otherwise
/// the default attribute when the entity has it (and no identity when it does not: its objects
/// are always inserted).
public struct AttributeIdentity: IdentityStrategy {
    /// The attribute that identifies the objects of an entity without declared identity or
    /// override, when the entity has it (`id`; `identifier` under a Rails `identifier` convention).
    public var defaultAttribute: String
    /// Per entity, the attributes that identify its objects instead (`["Issue": ["number"]]`); two
    /// or more make a composite identity.
    public var overrides: [String: [String]]

    /// A strategy identifying objects by `defaultAttribute`, except for the entities `overrides`
    /// names.
    public init(_ defaultAttribute: String = "id", overrides: [String: [String]] = [:]) {
        self.defaultAttribute = defaultAttribute
        self.overrides = overrides
    }

    public func identityAttributes(for entity: Entity) -> [String] {
        if let override = overrides[entity.name] { return override }
        if !entity.identity.isEmpty { return entity.identity }
        return entity.attribute(named: defaultAttribute) != nil ? [defaultAttribute] : []
    }
}

extension IdentityStrategy where Self == AttributeIdentity {
    /// Identify objects by `name` (default `id`), with per-entity overrides.
    public static func attribute(_ name: String = "id", overrides: [String: [String]] = [:]) -> AttributeIdentity {
        AttributeIdentity(name, overrides: overrides)
    }
}

/// Lenient conversion of identity values: numbers and numeric strings meet (`12345` = `"12345"`),
/// without ever losing precision: an integer identity must fit its attribute's width, and a
/// number written with a fraction or an exponent counts only when it is an exact integer of at
/// less than 2^53 (`12.0`, not `9007199254740993.0`, which parses as `…992`).
public enum IdentityCoercion {
    /// The identity value of `json` for an attribute of `type`, or nil when there is none: an integer
    /// from a number or a numeric string (within the attribute's width), a string from a string or
    /// a number, a UUID or URL from a string. Other types are not coerced (nil).
    public static func value(from json: JSON, for type: AttributeType) -> Value? {
        switch (type, json) {
        case (.int16, _), (.int32, _), (.int64, _):
            let integer: Int64?
            if let i = json.int64Value {
                integer = i
            } else if case .string(let s) = json {
                integer = Int64(s)
            } else {
                integer = nil
            }
            guard let integer else { return nil }
            switch type {
            case .int16 where Int16(exactly: integer) == nil: return nil
            case .int32 where Int32(exactly: integer) == nil: return nil
            default: return .int(integer)
            }
        case (.string, .string(let s)): return .string(s)
        case (.string, .int(let i)): return .string(String(i))
        case (.string, .double(let d)): return d.rounded() == d && abs(d) < 1e18 ? .string(String(Int64(d))) : .string("\(d)")
        case (.uuid, .string(let s)): return UUID(uuidString: s).map(Value.uuid)
        case (.url, .string(let s)): return URL(string: s).map(Value.url)
        default:
            return nil
        }
    }
}
