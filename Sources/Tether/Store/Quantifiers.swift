/// What stores share to answer ``Condition/any(_:_:)`` and ``Condition/all(_:_:)`` when they
/// evaluate a query in Swift rather than in their own query language (public for stores of
/// other packages, such as TetherPostgres): whether a condition inside one needs Swift, and the
/// answers for a set of rows, read with one batched read of links and one query of the
/// destination per `any`/`all`.
public enum Quantifiers {
    /// Whether `needs` holds for the resolved names of a condition inside `condition`'s
    /// `any`/`all` (at any depth); `entity` is the condition's.
    public static func inner(_ condition: Condition, of entity: Entity, entities: (String) -> Entity?,
                             need needs: ([String: AttributePath]) -> Bool) throws -> Bool {
        for (relationship, nested) in condition.quantified {
            let destination = try QueryCheck.destination(of: relationship, from: entity, entities: entities)
            if needs(try QueryCheck.check(nested, of: destination, entities: entities)) { return true }
            if try inner(nested, of: destination, entities: entities, need: needs) { return true }
        }
        return false
    }

    /// The answers to the top-level `any`/`all` of `condition` (on `entity`) for objects of the
    /// rows `rows`: `links(relationship, rows)` gives the rows each row links to, and
    /// `matching(destination, condition)` the destination's rows that meet a condition (a query
    /// of the store, which evaluates it as it can). The result answers `related` of
    /// ``Query/apply(to:related:)``.
    public static func answers(
        _ condition: Condition?, of entity: Entity, rows: [Int64], entities: (String) -> Entity?,
        links: (String, [Int64]) throws -> [Int64: [Int64]],
        matching: (String, Condition) throws -> Set<Int64>
    ) throws -> @Sendable (ObjectID, String, Bool, Condition) -> Bool {
        var answers: [Key: Answer] = [:]
        for (relationship, inner) in condition?.quantified ?? [] {
            let key = Key(relationship: relationship, condition: inner)
            guard answers[key] == nil else { continue }
            let destination = try QueryCheck.destination(of: relationship, from: entity, entities: entities)
            answers[key] = Answer(links: try links(relationship, rows), matching: try matching(destination.name, inner))
        }
        let found = answers
        return { id, relationship, every, inner in
            guard let answer = found[Key(relationship: relationship, condition: inner)] else { return every }
            let targets = answer.links[id.rowID] ?? []
            return every ? targets.allSatisfy(answer.matching.contains) : targets.contains(where: answer.matching.contains)
        }
    }

    private struct Key: Hashable, Sendable {
        let relationship: String
        let condition: Condition
    }

    private struct Answer: Sendable {
        let links: [Int64: [Int64]]
        let matching: Set<Int64>
    }
}
