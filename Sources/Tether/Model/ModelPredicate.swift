/// A condition on a model's properties, written with key paths and values the compiler checks:
/// `.equal(\.login, "octocat") && .greater(\.createdAt, lastWeek)`. It becomes a core
/// ``Condition`` on the entity's attributes, evaluated by the store.
public struct ModelPredicate<Model: EntityModel>: Sendable {
    let build: @Sendable (ModelLayout<Model>) throws -> Condition

    init(_ build: @escaping @Sendable (ModelLayout<Model>) throws -> Condition) { self.build = build }

    /// A core condition, for what key paths cannot say.
    public static func condition(_ condition: Condition) -> Self { Self { _ in condition } }

    private static func compare<V: Encodable & Sendable>(
        _ keyPath: any KeyPath<Model, V> & Sendable, _ value: V, _ use: String,
        _ make: @escaping @Sendable (String, Value) -> Condition, whenNil: (@Sendable (String) -> Condition)? = nil
    ) -> Self {
        Self { layout in
            let name = try layout.requireAttributeName(of: keyPath, for: use)
            guard let stored = try ValueConversion.encode(any: value) else {
                guard let whenNil else {
                    throw ModelError(.unconvertibleValue, entity: layout.entityName, member: name, "\(use) on \(layout.entityName).\(name) cannot compare with nil")
                }
                return whenNil(name)
            }
            return make(name, stored)
        }
    }

    /// The property equals `value`; with `nil`, the attribute is unset.
    public static func equal<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, "equal", { .equal($0, $1) }, whenNil: { .isNull($0) })
    }
    /// The property differs from `value` (an unset attribute differs from every value); with
    /// `nil`, the attribute is set.
    public static func notEqual<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, "notEqual", { .notEqual($0, $1) }, whenNil: { .isNotNull($0) })
    }
    /// The property is less than `value` (strings by code point, dates earlier, numbers smaller);
    /// an unset attribute never matches. Comparing with `nil` is a ``ModelError``
    /// (`.unconvertibleValue`), thrown by the fetch; use ``equal(_:_:)`` to find unset values.
    public static func less<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, "less", { .less($0, $1) })
    }
    /// The property is less than or equal to `value`; see ``less(_:_:)``.
    public static func lessOrEqual<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, "lessOrEqual", { .lessOrEqual($0, $1) })
    }
    /// The property is greater than `value` (`.greater(\.stargazersCount, 100)`); see ``less(_:_:)``.
    public static func greater<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, "greater", { .greater($0, $1) })
    }
    /// The property is greater than or equal to `value`; see ``less(_:_:)``.
    public static func greaterOrEqual<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, "greaterOrEqual", { .greaterOrEqual($0, $1) })
    }
    /// The property is one of `values`.
    public static func `in`<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable, _ values: [V]) -> Self {
        Self { layout in
            let name = try layout.requireAttributeName(of: keyPath, for: "in")
            return .in(name, try values.compactMap { try ValueConversion.encode(any: $0) })
        }
    }
    /// The string property starts with `prefix` (case-sensitive).
    public static func hasPrefix(_ keyPath: any KeyPath<Model, String> & Sendable, _ prefix: String) -> Self {
        Self { .hasPrefix(try $0.requireAttributeName(of: keyPath, for: "hasPrefix"), prefix) }
    }
    /// The optional string property is set and starts with `prefix` (case-sensitive).
    public static func hasPrefix(_ keyPath: any KeyPath<Model, String?> & Sendable, _ prefix: String) -> Self {
        Self { .hasPrefix(try $0.requireAttributeName(of: keyPath, for: "hasPrefix"), prefix) }
    }
    /// The string property contains `text` (case-sensitive).
    public static func contains(_ keyPath: any KeyPath<Model, String> & Sendable, _ text: String) -> Self {
        Self { .contains(try $0.requireAttributeName(of: keyPath, for: "contains"), text) }
    }
    /// The optional string property is set and contains `text` (case-sensitive).
    public static func contains(_ keyPath: any KeyPath<Model, String?> & Sendable, _ text: String) -> Self {
        Self { .contains(try $0.requireAttributeName(of: keyPath, for: "contains"), text) }
    }

    /// At least one model the to-many relationship holds meets `predicate`:
    /// `.any(\.labels, .equal(\.name, "bug"))` finds the issues with a label named "bug".
    public static func any<Destination: EntityModel>(_ keyPath: any KeyPath<Model, [Destination]> & Sendable,
                                                     _ predicate: ModelPredicate<Destination>) -> Self {
        quantified(keyPath, predicate, "any") { .any($0, $1) }
    }
    /// The to-one relationship leads to a model that meets `predicate` (false when it leads to
    /// none): `.any(\.repository, .any(\.labels, …))` quantifies through it.
    public static func any<Destination: EntityModel>(_ keyPath: any KeyPath<Model, Destination?> & Sendable,
                                                     _ predicate: ModelPredicate<Destination>) -> Self {
        quantified(keyPath, predicate, "any") { .any($0, $1) }
    }
    /// Every model the to-many relationship holds meets `predicate` (true when it holds none):
    /// `.all(\.labels, .hasPrefix(\.name, "area/"))`.
    public static func all<Destination: EntityModel>(_ keyPath: any KeyPath<Model, [Destination]> & Sendable,
                                                     _ predicate: ModelPredicate<Destination>) -> Self {
        quantified(keyPath, predicate, "all") { .all($0, $1) }
    }
    /// The to-one relationship leads to no model, or to one that meets `predicate`.
    public static func all<Destination: EntityModel>(_ keyPath: any KeyPath<Model, Destination?> & Sendable,
                                                     _ predicate: ModelPredicate<Destination>) -> Self {
        quantified(keyPath, predicate, "all") { .all($0, $1) }
    }

    /// A ``Condition/any(_:_:)`` or ``Condition/all(_:_:)`` over the relationship `keyPath`
    /// reads, with `predicate` built on its destination model.
    private static func quantified<V: Encodable & Sendable, Destination: EntityModel>(
        _ keyPath: any KeyPath<Model, V> & Sendable, _ predicate: ModelPredicate<Destination>, _ use: String,
        _ make: @escaping @Sendable (String, Condition) -> Condition
    ) -> Self {
        Self { layout in
            let name = try layout.requireName(of: keyPath, for: use)
            guard let member = layout[member: name], member.isRelationship else {
                throw ModelError(.unmappedKeyPath, entity: layout.entityName, member: name,
                                 "\(layout.entityName).\(name) is an attribute; \(use) quantifies over a relationship")
            }
            return make(name, try predicate.build(try ModelLayout<Destination>()))
        }
    }

    /// Both predicates hold: `.equal(\.state, "open") && .greater(\.comments, 10)`.
    public static func && (lhs: Self, rhs: Self) -> Self { Self { .and([try lhs.build($0), try rhs.build($0)]) } }
    /// At least one of the predicates holds.
    public static func || (lhs: Self, rhs: Self) -> Self { Self { .or([try lhs.build($0), try rhs.build($0)]) } }
    /// The predicate does not hold, objects whose attribute is unset included
    /// (`!.equal(\.language, "Swift")` finds repositories without a language too).
    public static prefix func ! (predicate: Self) -> Self { Self { .not(try predicate.build($0)) } }
}

/// A sort key of a model: `.ascending(\.fullName)`, `.descending(\.createdAt)`.
public struct ModelSort<Model: EntityModel>: Sendable {
    let build: @Sendable (ModelLayout<Model>) throws -> Sort

    /// Sorts by the property, smallest first (unset values first). A key path that names no
    /// attribute (a relationship, or an uncoded property) is a ``ModelError`` thrown by the fetch.
    public static func ascending<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable) -> Self {
        Self { Sort(try $0.requireAttributeName(of: keyPath, for: "ascending"), ascending: true) }
    }
    /// Sorts by the property, largest first (unset values last): `.descending(\.createdAt)`.
    public static func descending<V: Encodable & Sendable>(_ keyPath: any KeyPath<Model, V> & Sendable) -> Self {
        Self { Sort(try $0.requireAttributeName(of: keyPath, for: "descending"), ascending: false) }
    }
}
