public import Tether

/// A condition on a typed model, written with key paths and checked by the compiler:
///
/// ```swift
/// try await client.fetch(taskMapping, where: .equal(\.done, false) && .less(\.dueDate, tomorrow))
/// ```
///
/// The mapping turns it into a core `Condition` on attribute names; a key path that the
/// mapping does not map is a ``KeyPathMappingError`` (`unmappedKeyPath`).
public struct KeyPathPredicate<Model: Sendable>: Sendable {
    let resolve: @Sendable (KeyPathMapping<Model>) throws(KeyPathMappingError) -> Condition

    init(_ resolve: @escaping @Sendable (KeyPathMapping<Model>) throws(KeyPathMappingError) -> Condition) {
        self.resolve = resolve
    }

    /// A core condition as it is (attribute names, not key paths).
    public static func condition(_ condition: Condition) -> Self { Self { _ throws(KeyPathMappingError) in condition } }

    private static func compare<V: KeyPathValue>(
        _ keyPath: any KeyPath<Model, V> & Sendable, _ value: V, _ make: @escaping @Sendable (String, Value) -> Condition,
        whenNil: (@Sendable (String) -> Condition)? = nil
    ) -> Self {
        let stored = value.storedValue
        return Self { mapping throws(KeyPathMappingError) in
            let name = try mapping.requireAttribute(keyPath)
            guard let stored else { return whenNil?(name) ?? .isNull(name) }
            return make(name, stored)
        }
    }

    /// The property equals `value` (`nil` matches unset attributes).
    public static func equal<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, Condition.equal)
    }
    /// The property differs from `value` (`nil` matches set attributes). As in SQL, an unset
    /// attribute never differs from a value.
    public static func notEqual<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, Condition.notEqual, whenNil: Condition.isNotNull)
    }
    /// The property is less than `value`; an unset attribute never is.
    public static func less<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, Condition.less)
    }
    /// The property is less than or equal to `value`; an unset attribute never is.
    public static func lessOrEqual<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, Condition.lessOrEqual)
    }
    /// The property is greater than `value`; an unset attribute never is.
    public static func greater<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, Condition.greater)
    }
    /// The property is greater than or equal to `value`; an unset attribute never is.
    public static func greaterOrEqual<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable, _ value: V) -> Self {
        compare(keyPath, value, Condition.greaterOrEqual)
    }
    /// The property equals one of `values`.
    public static func `in`<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable, _ values: [V]) -> Self {
        let stored = values.compactMap(\.storedValue)
        return Self { mapping throws(KeyPathMappingError) in .in(try mapping.requireAttribute(keyPath), stored) }
    }
    /// The string property starts with `prefix` (case-sensitive).
    public static func hasPrefix(_ keyPath: any KeyPath<Model, String> & Sendable, _ prefix: String) -> Self {
        Self { mapping throws(KeyPathMappingError) in .hasPrefix(try mapping.requireAttribute(keyPath), prefix) }
    }
    /// The string property contains `text` (case-sensitive).
    public static func contains(_ keyPath: any KeyPath<Model, String> & Sendable, _ text: String) -> Self {
        Self { mapping throws(KeyPathMappingError) in .contains(try mapping.requireAttribute(keyPath), text) }
    }
    /// The array property has an element equal to `element` (`Condition.includes`):
    /// `.contains(\.tags, "swift")`.
    public static func contains<E: KeyPathValue & AttributeValue>(_ keyPath: any KeyPath<Model, [E]> & Sendable, _ element: E) -> Self {
        let value = element.attributeValue
        return Self { mapping throws(KeyPathMappingError) in .includes(try mapping.requireAttribute(keyPath), value) }
    }

    /// Both predicates hold.
    public static func && (lhs: Self, rhs: Self) -> Self {
        Self { mapping throws(KeyPathMappingError) in .and([try lhs.resolve(mapping), try rhs.resolve(mapping)]) }
    }
    /// At least one of the predicates holds.
    public static func || (lhs: Self, rhs: Self) -> Self {
        Self { mapping throws(KeyPathMappingError) in .or([try lhs.resolve(mapping), try rhs.resolve(mapping)]) }
    }
    /// The predicate does not hold. Logic is two-valued: `!.equal(\.desc, "x")` includes the models
    /// whose `desc` is unset.
    public static prefix func ! (predicate: Self) -> Self {
        Self { mapping throws(KeyPathMappingError) in .not(try predicate.resolve(mapping)) }
    }
}

/// A sort key of a typed model, written with a key path: `.ascending(\.desc)`.
public struct KeyPathSort<Model: Sendable>: Sendable {
    let keyPath: any PartialKeyPath<Model> & Sendable
    let ascending: Bool

    /// Sorts by the property, smallest first; unset values come first.
    public static func ascending<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable) -> Self {
        Self(keyPath: keyPath, ascending: true)
    }
    /// Sorts by the property, largest first; unset values come last.
    public static func descending<V: KeyPathValue>(_ keyPath: any KeyPath<Model, V> & Sendable) -> Self {
        Self(keyPath: keyPath, ascending: false)
    }
}

extension KeyPathMapping {
    func requireAttribute(_ keyPath: AnyKeyPath) throws(KeyPathMappingError) -> String {
        guard let name = attributeName(for: keyPath) else {
            throw KeyPathMappingError(
                .unmappedKeyPath, entity: entityName, member: nil,
                "\(entityName): the key path \(keyPath) is not mapped to an attribute")
        }
        return name
    }

    /// The core condition of a typed predicate.
    public func condition(_ predicate: KeyPathPredicate<Model>) throws(KeyPathMappingError) -> Condition {
        try predicate.resolve(self)
    }

    /// The core sort of typed sort keys.
    public func sort(_ keys: [KeyPathSort<Model>]) throws(KeyPathMappingError) -> [Sort] {
        var sort: [Sort] = []
        for key in keys { sort.append(Sort(try requireAttribute(key.keyPath), ascending: key.ascending)) }
        return sort
    }
}
