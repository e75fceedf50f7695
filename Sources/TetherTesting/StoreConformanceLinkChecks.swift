import Foundation
import Tether

/// The link batch check: a store's ``StoreWriter/setRelated(_:)`` gives the graph that
/// ``StoreWriter/setRelated(_:of:to:)`` row by row gives, for every kind of relationship.
extension Checks {
    /// Every relationship of the suite's schema, from both sides: name, source entity, target
    /// entity, and whether the source side is to-one.
    private static let relationships: [(name: String, source: String, target: String, toOne: Bool)] = [
        ("tags", "Post", "Tag", false), ("posts", "Tag", "Post", false),                  // many-to-many, ordered on Post
        ("posts", "Author", "Post", false), ("author", "Post", "Author", true),            // one-to-many
        ("profile", "Author", "Profile", true), ("author", "Profile", "Author", true),      // one-to-one
        ("pinned", "Author", "Post", true), ("starred", "Author", "Post", false),           // without inverse
        ("songs", "Playlist", "Song", false), ("playlist", "Song", "Playlist", true),       // ordered one-to-many
        ("members", "Group", "Member", false), ("groups", "Member", "Group", false),        // many-to-many
        ("students", "Course", "Student", false), ("courses", "Student", "Course", false),  // many-to-many, ordered on Student
        ("cards", "Deck", "Card", false), ("decks", "Card", "Deck", false),                 // many-to-many, ordered on both
    ]

    /// The relationships each entity is read through when graphs are compared.
    private static let reads: [String: [(name: String, ordered: Bool)]] = [
        "Post": [("tags", true), ("author", true)], "Tag": [("posts", false)],
        "Author": [("posts", false), ("profile", true), ("pinned", true), ("starred", false)], "Profile": [("author", true)],
        "Playlist": [("songs", true)], "Song": [("playlist", true)],
        "Group": [("members", false)], "Member": [("groups", false)],
        "Course": [("students", false)], "Student": [("courses", true)],
        "Deck": [("cards", true)], "Card": [("decks", true)],
    ]

    func linkBatches() async throws {
        try prepared()
        let reference = InMemoryStore()
        try reference.prepare(for: StoreConformance.schema)
        // The same objects in both stores, told apart by their `id`.
        let counts = ["Post": 12, "Tag": 5, "Author": 6, "Profile": 6, "Playlist": 4, "Song": 10, "Group": 4, "Member": 8,
                      "Course": 4, "Student": 8, "Deck": 4, "Card": 8]
        var mine: [String: [ObjectID]] = [:]
        var theirs: [String: [ObjectID]] = [:]
        for (entity, count) in counts.sorted(by: { $0.key < $1.key }) {
            let rows = (0..<count).map { ["id": Value.int(Int64($0 + 1))] }
            mine[entity] = try await insertMany(entity, rows)
            theirs[entity] = try await reference.write { writer in try rows.map { try writer.insert(entity, values: $0).id } }
        }
        var random = LinkRandom(seed: 23)
        for round in 0..<80 {
            let (name, source, target, toOne) = Self.relationships[round % Self.relationships.count]
            // A few rows with shared targets; every third round repeats a source (written in row order).
            var rows: [(source: Int, targets: [Int])] = []
            var used = Set<Int>()
            for _ in 0..<(1 + random.below(4)) {
                var s = random.below(counts[source]!)
                if round % 3 != 0 { while used.contains(s) && used.count < counts[source]! { s = random.below(counts[source]!) } }
                used.insert(s)
                let n = toOne ? random.below(2) : random.below(5)
                rows.append((s, (0..<n).map { _ in random.below(counts[target]!) }))
            }
            var batch = LinkBatch(entity: source, relationship: name)
            for row in rows { batch.append(mine[source]![row.source], to: row.targets.map { mine[target]![$0] }) }
            let written = batch
            let referenceSources = rows.map { theirs[source]![$0.source] }
            let linkedBefore = try await reference.read { try $0.related(name, of: referenceSources) }
            let stream = store.changes()
            try await store.write { try $0.setRelated(written) }
            let steps = rows.map { row in (theirs[source]![row.source], row.targets.map { theirs[target]![$0] }) }
            try await reference.write { writer in
                for (object, targets) in steps { try writer.setRelated(name, of: object, to: targets) }
            }
            try await expectSameGraph(mine, theirs, reference, "after round \(round) (\(source).\(name), rows \(rows))")
            // The change set names each source whose links changed, with the relationship.
            let linkedAfter = try await reference.read { try $0.related(name, of: referenceSources) }
            let changed = rows.map(\.source).filter { linkedBefore[theirs[source]![$0]] != linkedAfter[theirs[source]![$0]] }
            if !changed.isEmpty {
                var iterator = stream.makeAsyncIterator()
                let changes = await iterator.next()
                for s in changed {
                    let id = mine[source]![s]
                    try expect(changes?.updated.contains(id) == true && changes?.changedProperties(of: id)?.contains(name) != false,
                               "round \(round): the change set names \(id) with '\(name)' (got \(String(describing: changes)))")
                }
            }
        }

        // Batches of more links than one statement of a store may hold (dozens): every post gets
        // every tag, then the same tags in the other order (each link moves), then one or none.
        let assignments: [(String, (Int) -> [Int])] = [
            ("every tag", { p in (0..<5).map { (p + $0) % 5 } }),
            ("every tag, reversed", { p in (0..<5).map { (p + $0) % 5 }.reversed() }),
            ("one tag or none", { p in p % 3 == 0 ? [] : [p % 5] }),
        ]
        for (what, tagsOf) in assignments {
            var batch = LinkBatch(entity: "Post", relationship: "tags")
            var steps: [(ObjectID, [ObjectID])] = []
            for p in 0..<counts["Post"]! {
                batch.append(mine["Post"]![p], to: tagsOf(p).map { mine["Tag"]![$0] })
                steps.append((theirs["Post"]![p], tagsOf(p).map { theirs["Tag"]![$0] }))
            }
            let (written, referenceSteps) = (batch, steps)
            try await store.write { try $0.setRelated(written) }
            try await reference.write { writer in
                for (post, tags) in referenceSteps { try writer.setRelated("tags", of: post, to: tags) }
            }
            try await expectSameGraph(mine, theirs, reference, "after a large batch (\(what))")
        }

        // On a relationship ordered on both sides, one batch moves a link among its source's links
        // and adds a link to the same target from a source stored before: the moved link keeps its
        // place among the target's links and the new one goes after it, not beside it at one place.
        let (decks, cards, referenceDecks, referenceCards) = (mine["Deck"]!, mine["Card"]!, theirs["Deck"]!, theirs["Card"]!)
        try await store.write { writer in
            try writer.setRelated("cards", of: decks[0], to: [])
            try writer.setRelated("cards", of: decks[1], to: [cards[0], cards[1]])
        }
        try await reference.write { writer in
            try writer.setRelated("cards", of: referenceDecks[0], to: [])
            try writer.setRelated("cards", of: referenceDecks[1], to: [referenceCards[0], referenceCards[1]])
        }
        var moving = LinkBatch(entity: "Deck", relationship: "cards")
        moving.append(decks[0], to: [cards[0]])             // new: last among the card's decks
        moving.append(decks[1], to: [cards[1], cards[0]])   // moved among the deck's cards only
        let movingBatch = moving
        try await store.write { try $0.setRelated(movingBatch) }
        try await reference.write { writer in
            try writer.setRelated("cards", of: referenceDecks[0], to: [referenceCards[0]])
            try writer.setRelated("cards", of: referenceDecks[1], to: [referenceCards[1], referenceCards[0]])
        }
        try await expectSameGraph(mine, theirs, reference, "after a batch that moves a link and adds one to the same target (ordered on both sides)")

        // Errors: a target of another entity, a target or source not stored, several targets for a
        // to-one relationship; the whole batch changes nothing.
        let posts = mine["Post"]!, tags = mine["Tag"]!, authors = mine["Author"]!
        let before = try await store.read { try $0.related("tags", of: posts) }
        func failing(_ kind: StoreError.Kind, _ what: String, _ build: (inout LinkBatch) -> Void) async throws {
            var batch = LinkBatch(entity: "Post", relationship: "tags")
            batch.append(posts[0], to: [tags[0], tags[1]])
            build(&batch)
            let written = batch
            try await expectError(kind, what) { try await store.write { try $0.setRelated(written) } }
            try expectEqual(try await store.read { try $0.related("tags", of: posts) }, before, "\(what): nothing changed")
        }
        try await failing(.typeMismatch, "a target of another entity") { $0.append(posts[1], to: [authors[0]]) }
        try await failing(.objectNotFound, "a target that is not stored") {
            $0.append(posts[1], to: [ObjectID(entity: "Tag", rowID: tags.map(\.rowID).max()! + 1000)])
        }
        try await failing(.objectNotFound, "a source that is not stored") {
            $0.append(ObjectID(entity: "Post", rowID: posts.map(\.rowID).max()! + 1000), to: [tags[2]])
        }
        try await failing(.typeMismatch, "a source of another entity") { $0.append(authors[0], to: [tags[2]]) }
        try await expectError(.typeMismatch, "two targets for a to-one relationship") {
            try await store.write { writer in
                var batch = LinkBatch(entity: "Post", relationship: "author")
                batch.append(posts[0], to: [authors[0], authors[1]])
                try writer.setRelated(batch)
            }
        }
        try await expectError(.unknownRelationship, "an unknown relationship") {
            try await store.write { writer in
                var batch = LinkBatch(entity: "Post", relationship: "nope")
                batch.append(posts[0], to: [])
                try writer.setRelated(batch)
            }
        }
    }

    /// Every object of both stores has the same links through every relationship (in order where
    /// the relationship is ordered or to-one).
    private func expectSameGraph(_ mine: [String: [ObjectID]], _ theirs: [String: [ObjectID]], _ reference: InMemoryStore,
                                 _ when: String) async throws {
        func ids(_ list: [ObjectID], _ in: [ObjectID]) -> [Int] { list.map { id in `in`.firstIndex(of: id) ?? -1 } }
        for (entity, relationships) in Self.reads {
            for (name, ordered) in relationships {
                let destination = StoreConformance.schema[entity]!.relationship(named: name)!.destination
                let actual = try await store.read { try $0.related(name, of: mine[entity]!) }
                let expected = try await reference.read { try $0.related(name, of: theirs[entity]!) }
                for (index, object) in mine[entity]!.enumerated() {
                    let a = ids(actual[object] ?? [], mine[destination]!)
                    let e = ids(expected[theirs[entity]![index]] ?? [], theirs[destination]!)
                    if ordered {
                        try expectEqual(a, e, "\(entity) \(index + 1).\(name) \(when)")
                    } else {
                        try expectEqual(a.sorted(), e.sorted(), "\(entity) \(index + 1).\(name) \(when)")
                    }
                }
            }
        }
    }
}

/// SplitMix64, for the check's reproducible random graphs.
private struct LinkRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func below(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
