import Foundation

/// A fetch: an entity, an optional condition, a sort order, a limit and an offset.
///
/// ```swift
/// let query = Query("Repository", where: .equal("language", .string("Swift")) && .greater("stars", .int(10)),
///                   sortedBy: [.descending("stars")], limit: 20)
/// ```
public struct Query: Sendable, Hashable {
    /// The entity whose objects the query finds.
    public var entity: String
    /// The condition objects must meet; nil finds every object of the entity.
    public var condition: Condition?
    /// The sort keys, most significant first; ties (and an empty list) are broken by row id, the
    /// order of insertion.
    public var sort: [Sort]
    /// The most objects returned, after ``offset``; nil for no limit.
    public var limit: Int?
    /// How many objects of the sorted result are skipped.
    public var offset: Int

    /// A query of `entity`'s objects meeting `condition`, sorted, then windowed by `offset` and
    /// `limit`.
    public init(_ entity: String, where condition: Condition? = nil, sortedBy sort: [Sort] = [], limit: Int? = nil, offset: Int = 0) {
        self.entity = entity
        self.condition = condition
        self.sort = sort
        self.limit = limit
        self.offset = offset
    }
}

extension Query {
    /// Filters, sorts (ties broken by row id) and pages objects in memory, as the query says.
    /// Stores that cannot evaluate a query natively use it. An ``Condition/any(_:_:)`` or
    /// ``Condition/all(_:_:)`` needs the objects' relationships: see
    /// ``apply(to:pathValues:related:)``.
    public func apply(to objects: [Object]) -> [Object] {
        apply(to: objects) { _, _, every, _ in every }
    }

    /// ``apply(to:)``, with `related(object, relationship, every, condition)` answering the
    /// condition's `any` (`every` false) and `all` (`every` true) for an object.
    public func apply(to objects: [Object], related: (ObjectID, String, Bool, Condition) -> Bool) -> [Object] {
        var matches = condition.map { condition in
            objects.filter { object in
                condition.matches(value: { object.values[$0] }, related: { related(object.id, $0, $1, $2) })
            }
        } ?? objects
        matches.sort { a, b in
            if Sort.areInIncreasingOrder(a.values, b.values, by: sort) { return true }
            if Sort.areInIncreasingOrder(b.values, a.values, by: sort) { return false }
            return a.id.rowID < b.id.rowID
        }
        let start = min(max(0, offset), matches.count)
        let end = limit.map { start + min(matches.count - start, max(0, $0)) } ?? matches.count
        return Array(matches[start..<end])
    }
}

/// A typed condition on attributes. Every store evaluates it; SQL stores translate it to SQL with
/// bound parameters.
///
/// Logic is two-valued: a comparison with an unset attribute is false (use ``isNull(_:)`` to find
/// those), and ``not(_:)`` is true exactly when its condition is false, so `!.equal("name", "Bob")`
/// includes objects without a name. SQL stores translate `NOT c` as `NOT coalesce(c, 0)`.
///
/// Arrays, maps and JSON values (``AttributeType/isCollection``) are compared with nothing: a
/// comparison or ``in(_:_:)`` on one is false; ``includes(_:_:)`` finds an array's element, and
/// ``isNull(_:)`` / ``isNotNull(_:)`` whether one is set.
public indirect enum Condition: Sendable, Hashable {
    /// The attribute equals the value.
    case equal(String, Value)
    /// The attribute is set and differs from the value (an unset attribute does not match).
    case notEqual(String, Value)
    /// The attribute is less than the value.
    case less(String, Value)
    /// The attribute is less than or equal to the value.
    case lessOrEqual(String, Value)
    /// The attribute is greater than the value.
    case greater(String, Value)
    /// The attribute is greater than or equal to the value.
    case greaterOrEqual(String, Value)
    /// The attribute equals one of the values.
    case `in`(String, [Value])
    /// The attribute is not set.
    case isNull(String)
    /// The attribute is set.
    case isNotNull(String)
    /// Case-sensitive string prefix.
    case hasPrefix(String, String)
    /// Case-sensitive substring.
    case contains(String, String)
    /// The array attribute (``AttributeType/array(_:)``) has an element equal to the value, as
    /// ``equal(_:_:)`` compares: `.includes("topics", .string("swift"))`. False for an unset
    /// array and for an attribute of another type.
    case includes(String, Value)
    /// At least one object the relationship leads to (to-many or to-one) meets the condition,
    /// whose names are those of the relationship's destination (attributes, paths, and further
    /// `any`/`all`): `.any("labels", .equal("name", .string("bug")))` finds the issues with a label
    /// named "bug". False for an object the relationship leads to nothing. Quantify through
    /// several relationships by nesting: `.any("repository", .any("labels", …))`.
    case any(String, Condition)
    /// Every object the relationship leads to meets the condition (names as for ``any(_:_:)``):
    /// `.all("labels", .hasPrefix("name", "area/"))`. True for an object the relationship leads
    /// to nothing, as in Core Data's `ALL` and SQL's `NOT EXISTS`; add
    /// `.any(relationship, .and([]))` to ask for at least one.
    case all(String, Condition)
    /// Every condition holds (true for an empty list).
    case and([Condition])
    /// At least one condition holds (false for an empty list).
    case or([Condition])
    /// The condition does not hold, unset attributes included (see above).
    case not(Condition)

    /// Both conditions hold: `.and([lhs, rhs])`.
    public static func && (lhs: Condition, rhs: Condition) -> Condition { .and([lhs, rhs]) }
    /// At least one of the conditions holds: `.or([lhs, rhs])`.
    public static func || (lhs: Condition, rhs: Condition) -> Condition { .or([lhs, rhs]) }
    /// The condition does not hold: `.not(condition)`.
    public static prefix func ! (condition: Condition) -> Condition { .not(condition) }

    /// Evaluates the condition against attribute values (used by in-memory stores). An
    /// ``any(_:_:)`` or ``all(_:_:)`` needs the object's relationships: use
    /// ``matches(value:related:)``; here one is answered as if the relationship led to nothing.
    public func matches(_ values: [String: Value]) -> Bool {
        matches { values[$0] }
    }

    /// Evaluates the condition with `value` giving each attribute's value by name (nil: unset):
    /// how a store that keeps values by position evaluates it without a dictionary per object.
    /// An ``any(_:_:)`` or ``all(_:_:)`` is answered as if the relationship led to nothing (see
    /// ``matches(value:related:)``).
    public func matches(value: (String) -> Value?) -> Bool {
        matches(value: value) { _, every, _ in every }
    }

    /// Evaluates the condition with `value` giving each attribute's value by name, and
    /// `related(relationship, every, condition)` answering an ``any(_:_:)`` (`every` false: does
    /// at least one object the relationship leads to meet `condition`?) or an ``all(_:_:)``
    /// (`every` true: do all of them?).
    public func matches(value: (String) -> Value?, related: (String, Bool, Condition) -> Bool) -> Bool {
        func compare(_ name: String, _ operand: Value, _ accept: (ComparisonResult) -> Bool) -> Bool {
            guard let stored = value(name), Self.comparable(stored, operand) else { return false }
            return accept(Value.compare(stored, operand))
        }
        switch self {
        case .equal(let n, let v): return compare(n, v) { $0 == .orderedSame }
        case .notEqual(let n, let v): return compare(n, v) { $0 != .orderedSame }
        case .less(let n, let v): return compare(n, v) { $0 == .orderedAscending }
        case .lessOrEqual(let n, let v): return compare(n, v) { $0 != .orderedDescending }
        case .greater(let n, let v): return compare(n, v) { $0 == .orderedDescending }
        case .greaterOrEqual(let n, let v): return compare(n, v) { $0 != .orderedAscending }
        case .in(let n, let vs):
            guard let stored = value(n) else { return false }
            return vs.contains { v in Self.comparable(stored, v) && Value.compare(stored, v) == .orderedSame }
        case .isNull(let n): return value(n) == nil
        case .isNotNull(let n): return value(n) != nil
        case .hasPrefix(let n, let p):
            if case .string(let s)? = value(n) { return s.utf8.starts(with: p.utf8) }
            return false
        case .contains(let n, let p):
            if case .string(let s)? = value(n) { return p.isEmpty || s.utf8.firstRange(of: p.utf8) != nil }
            return false
        case .includes(let n, let v):
            guard case .array(let elements)? = value(n) else { return false }
            return elements.contains { Self.comparable($0, v) && Value.compare($0, v) == .orderedSame }
        case .any(let r, let c): return related(r, false, c)
        case .all(let r, let c): return related(r, true, c)
        case .and(let cs): return cs.allSatisfy { $0.matches(value: value, related: related) }
        case .or(let cs): return cs.contains { $0.matches(value: value, related: related) }
        case .not(let c): return !c.matches(value: value, related: related)
        }
    }

    private static func comparable(_ a: Value, _ b: Value) -> Bool {
        // NaN is unordered: a comparison with it is false, as with a value of another kind (SQL
        // stores bind NaN as NULL).
        if case .double(let x) = a, x.isNaN { return false }
        if case .double(let x) = b, x.isNaN { return false }
        switch (a, b) {
        case (.string, .string), (.int, .int), (.double, .double), (.int, .double), (.double, .int),
            (.decimal, .decimal), (.bool, .bool), (.date, .date), (.data, .data), (.uuid, .uuid), (.url, .url):
            return true
        default:
            return false
        }
    }

    /// The attribute names (and paths) the condition refers to on its entity; not those inside an
    /// ``any(_:_:)`` or ``all(_:_:)``, which are names of another entity (see ``quantified``).
    public var attributes: Set<String> {
        switch self {
        case .equal(let n, _), .notEqual(let n, _), .less(let n, _), .lessOrEqual(let n, _), .greater(let n, _),
            .greaterOrEqual(let n, _), .in(let n, _), .isNull(let n), .isNotNull(let n), .hasPrefix(let n, _),
            .contains(let n, _), .includes(let n, _):
            return [n]
        case .any, .all: return []
        case .and(let cs), .or(let cs): return cs.reduce(into: Set<String>()) { $0.formUnion($1.attributes) }
        case .not(let c): return c.attributes
        }
    }

    /// The ``any(_:_:)`` and ``all(_:_:)`` the condition holds at its top (not those nested in
    /// them), in order: each relationship with its condition.
    public var quantified: [(relationship: String, condition: Condition)] {
        switch self {
        case .any(let r, let c), .all(let r, let c): return [(r, c)]
        case .and(let cs), .or(let cs): return cs.flatMap(\.quantified)
        case .not(let c): return c.quantified
        default: return []
        }
    }
}

/// One key of a sort order. Unset values sort first in ascending order.
public struct Sort: Sendable, Hashable {
    /// The attribute sorted by.
    public var attribute: String
    /// True for smallest first (unset values first), false for largest first (unset values last).
    public var ascending: Bool

    /// A sort key on `attribute`, ascending unless `ascending` is false.
    public init(_ attribute: String, ascending: Bool = true) {
        self.attribute = attribute
        self.ascending = ascending
    }

    /// Sorts by `attribute`, smallest first: `.ascending("name")`.
    public static func ascending(_ attribute: String) -> Sort { Sort(attribute, ascending: true) }
    /// Sorts by `attribute`, largest first: `.descending("stars")`.
    public static func descending(_ attribute: String) -> Sort { Sort(attribute, ascending: false) }

    /// Orders attribute dictionaries by a list of sort keys (used by in-memory stores).
    public static func areInIncreasingOrder(_ lhs: [String: Value], _ rhs: [String: Value], by sort: [Sort]) -> Bool {
        for key in sort {
            let result: ComparisonResult
            switch (lhs[key.attribute], rhs[key.attribute]) {
            case (nil, nil): result = .orderedSame
            case (nil, _): result = .orderedAscending
            case (_, nil): result = .orderedDescending
            case (let a?, let b?): result = Value.compare(a, b)
            }
            if result == .orderedSame { continue }
            return key.ascending ? result == .orderedAscending : result == .orderedDescending
        }
        return false
    }
}
