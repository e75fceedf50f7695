import Foundation
public import Tether


/// The behaviour every `Store` must have, as a suite any store can run: the built-in
/// `InMemoryStore` and `SQLiteStore` run it, and so should a store you write.
///
/// Each check builds a fresh store with `makeStore`, prepares it with its own schema, and throws a
/// ``ConformanceFailure`` describing the first difference from the expected behaviour. The suite
/// does not depend on a test framework: call it from Swift Testing or XCTest.
///
/// ```swift
/// @Test(arguments: StoreConformance.Check.allCases)
/// func conformance(_ check: StoreConformance.Check) async throws {
///     try await StoreConformance { MyServerStore(url: testServerURL) }.run(check)
/// }
/// ```
public struct StoreConformance: Sendable {
    /// One behaviour of the suite.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// `prepare(for:)`: a store refuses to read before it, may be prepared twice with one schema,
        /// and names unknown entities and attributes (`unknownEntity`, `unknownAttribute`).
        case prepare
        /// Insert, update and clear attributes, and delete one object: the values read back are the
        /// values written, and setting an attribute wins over clearing it in the same update.
        case insertUpdateClearDelete
        /// The write errors: a duplicate identity (on insert or update), an unknown attribute, a value
        /// of the wrong type, an update or delete of a missing object.
        case writeErrors
        /// `objects(_:identities:)` with 1,800 integer identities against 1,500 objects: each found or
        /// left out, with the right values; a string or double identity finds nothing.
        case identityLookupInt
        /// The same by string identity: case- and space-sensitive, with empty, accented, non-Latin and
        /// quoted strings.
        case identityLookupString
        /// The same by an identity of two attributes: order matters, a partial key finds nothing, and a
        /// duplicate pair is refused.
        case identityLookupComposite
        /// `fetch` and `count` with every kind of `Condition`, on a data set with unset values and every
        /// attribute type, giving exactly what `Condition.matches(_:)` gives.
        case fetchConditions
        /// Sorts on every attribute type, ascending and descending, on several keys, with limits and
        /// offsets: the order and window of `Query.apply(to:)`.
        case sortLimitOffsetCount
        /// `any` and `all` (`Condition.any(_:_:)`) over each kind of relationship (to-many by the
        /// other side's to-one, one-to-one, to-one and to-many without inverse, ordered
        /// many-to-many), nested, negated and combined, in `fetch`, `ids` and `count`: what the
        /// related objects' links and values say; an unknown relationship is refused.
        case quantifiedConditions
        /// A to-one relationship and its to-many inverse: linking, moving to another object, unlinking,
        /// each seen from both sides.
        case toOne
        /// A to-many relationship: duplicates ignored, an object taken from its previous owner, the
        /// inverse kept in step.
        case toMany
        /// An ordered to-many relationship keeps the order it is set in; linking from the to-one side
        /// appends, and moving an object removes it from its previous list.
        case orderedToMany
        /// A many-to-many relationship set from either side, the other side kept in step.
        case manyToMany
        /// A one-to-one relationship: linking an object takes it away from its previous partner, from
        /// either side.
        case oneToOne
        /// Relationships without inverse: several objects may link one target, in order for a to-many.
        case withoutInverse
        /// Deleting an object removes it from every relationship that linked it, on both sides.
        case deleteRemovesLinks
        /// The link errors: an object of the wrong entity (`typeMismatch`), a missing object
        /// (`objectNotFound`), two targets for a to-one relationship, an unknown relationship.
        case relationshipErrors
        /// `related(_:of:)` for 1,200 objects at once: each object with links present, in order, and the
        /// others absent from the result; `links(_:of:)` for the same objects says the same, one row
        /// per object in order, and refuses objects of two entities.
        case relatedBatch
        /// `DeleteRules` through the store: `deny` refuses the delete while it links an object, and
        /// `cascade` deletes the objects it links along with the source.
        case deleteRules
        /// A write that throws leaves nothing behind: no insert, update, link or delete of it is seen.
        case rollback
        /// A read runs while a write is open, and sees the last committed state, not the write's.
        case readDuringWrite
        /// Transactions, and writers waiting for another, hold no thread of Swift's cooperative pool
        /// (the check fails after two minutes instead of hanging when they do).
        case waitingOffThePool
        /// `changes()`: one change set per committed transaction that changed something, with the
        /// inserted, updated (and which properties) and deleted objects; nothing for a rolled-back or
        /// empty write.
        case changeSets
        /// Every attribute type, extreme values included, reads back equal by id, by identity and by
        /// fetch.
        case valuesRoundTrip
        /// `insert(_:)` of an `InsertBatch`: ids in row order, unset values left unset, to-one links set
        /// with the rows, one change set; a batch with a repeated, stored or missing identity, a
        /// value of the wrong type or a bad target throws and writes none of its rows.
        case batchInsert
        /// `update(_:)` of an `UpdateBatch`: only the given values change, nil leaves a value as it is,
        /// and the change set names the changed properties.
        case batchUpdate
        /// `find(_:identities:attributes:)`: one row per identity asked, in order, with the values of
        /// the attributes asked, nil for an identity not stored.
        case findByIdentity
        /// `compare(_:)` of a `LookupBatch`: for each stored identity, the positions of the given values
        /// that differ from the stored ones, for every attribute type, and the current targets of the
        /// to-one relationships asked.
        case compareByIdentity
        /// Live results on the store: after each write, the next snapshot is what a fresh fetch finds,
        /// and its difference turns the previous snapshot into it; a write of an attribute the
        /// observer does not read yields nothing.
        case observedResults
        /// The record Tether keeps beside an object (`remoteRecord(of:)`, `setRemoteRecord(_:of:)`):
        /// stored per object, rolled back with its transaction, deleted with its object; or
        /// `.unsupported` from both methods.
        case remoteRecords
        /// `setRelated(_:)` of `LinkBatch`es gives, on random graphs of every kind of relationship, the
        /// graph that `setRelated(_:of:to:)` gives row by row (checked against an `InMemoryStore`).
        case linkBatches
        /// `version` of a write transaction, when the store reports one: the same at the end of the
        /// body as at its start, unchanged by reads, and `next` of the last committed write's,
        /// whether or not that write changed anything.
        case versions

        public var description: String { rawValue }
    }

    let makeStore: @Sendable () throws -> any Store

    /// A conformance suite for the stores `makeStore` makes.
    ///
    /// - Parameter makeStore: returns a new, empty, unprepared store for each check.
    public init(makeStore: @escaping @Sendable () throws -> any Store) {
        self.makeStore = makeStore
    }

    /// Runs every check; throws a ``ConformanceFailure`` listing every failed check.
    public func run() async throws {
        var failures: [String] = []
        for check in Check.allCases {
            do {
                try await run(check)
            } catch {
                failures.append("\(check): \(error)")
            }
        }
        if !failures.isEmpty {
            throw ConformanceFailure(check: nil, failures.joined(separator: "\n"))
        }
    }

    /// Runs one check.
    public func run(_ check: Check) async throws {
        let store = try makeStore()
        let checks = Checks(store: store, check: check)
        switch check {
        case .prepare: try await checks.prepare()
        case .insertUpdateClearDelete: try await checks.insertUpdateClearDelete()
        case .writeErrors: try await checks.writeErrors()
        case .identityLookupInt: try await checks.identityLookupInt()
        case .identityLookupString: try await checks.identityLookupString()
        case .identityLookupComposite: try await checks.identityLookupComposite()
        case .fetchConditions: try await checks.fetchConditions()
        case .sortLimitOffsetCount: try await checks.sortLimitOffsetCount()
        case .quantifiedConditions: try await checks.quantifiedConditions()
        case .toOne: try await checks.toOne()
        case .toMany: try await checks.toMany()
        case .orderedToMany: try await checks.orderedToMany()
        case .manyToMany: try await checks.manyToMany()
        case .oneToOne: try await checks.oneToOne()
        case .withoutInverse: try await checks.withoutInverse()
        case .deleteRemovesLinks: try await checks.deleteRemovesLinks()
        case .relationshipErrors: try await checks.relationshipErrors()
        case .relatedBatch: try await checks.relatedBatch()
        case .deleteRules: try await checks.deleteRules()
        case .rollback: try await checks.rollback()
        case .readDuringWrite: try await checks.readDuringWrite()
        case .waitingOffThePool: try await checks.waitingOffThePool()
        case .changeSets: try await checks.changeSets()
        case .valuesRoundTrip: try await checks.valuesRoundTrip()
        case .batchInsert: try await checks.batchInsert()
        case .batchUpdate: try await checks.batchUpdate()
        case .findByIdentity: try await checks.findByIdentity()
        case .compareByIdentity: try await checks.compareByIdentity()
        case .observedResults: try await checks.observedResults()
        case .remoteRecords: try await checks.remoteRecords()
        case .linkBatches: try await checks.linkBatches()
        case .versions: try await checks.versions()
        }
    }

    /// The schema the checks prepare stores with (identities resolved).
    public static let schema: Schema = try! Schema {
        Entity("Item", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("score", .double)
            Attribute("rank", .int64)
            Attribute("small", .int16)
            Attribute("medium", .int32)
            Attribute("ratio", .float)
            Attribute("price", .decimal)
            Attribute("flag", .bool)
            Attribute("when", .date)
            Attribute("blob", .data)
            Attribute("code", .uuid)
            Attribute("site", .url)
            Attribute("extra", .transformable("any"))
        }
        Entity("Person", identity: "code") {
            Attribute("code", .string)
            Attribute("name", .string)
        }
        Entity("Pair", identity: "left", "right") {
            Attribute("left", .int64)
            Attribute("right", .string)
            Attribute("note", .string)
        }
        Entity("Author", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("posts", "Post", inverse: "author")
            Relationship.toOne("profile", "Profile", inverse: "author")
            Relationship.toOne("pinned", "Post")
            Relationship.toMany("starred", "Post")
        }
        Entity("Post", identity: "id") {
            Attribute("id", .int64)
            Attribute("title", .string)
            Relationship.toOne("author", "Author", inverse: "posts")
            Relationship.toMany("tags", "Tag", inverse: "posts", ordered: true)
        }
        Entity("Tag", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("posts", "Post", inverse: "tags")
        }
        Entity("Profile", identity: "id") {
            Attribute("id", .int64)
            Relationship.toOne("author", "Author", inverse: "profile")
        }
        Entity("Playlist", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("songs", "Song", inverse: "playlist", ordered: true)
        }
        Entity("Song", identity: "id") {
            Attribute("id", .int64)
            Relationship.toOne("playlist", "Playlist", inverse: "songs")
        }
        Entity("Group", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("members", "Member", inverse: "groups")
        }
        Entity("Member", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("groups", "Group", inverse: "members")
        }
        Entity("Course", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("students", "Student", inverse: "courses")
        }
        Entity("Student", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("courses", "Course", inverse: "students", ordered: true)
        }
        Entity("Deck", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("cards", "Card", inverse: "decks", ordered: true)
        }
        Entity("Card", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("decks", "Deck", inverse: "cards", ordered: true)
        }
        Entity("Department", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("employees", "Employee", inverse: "department", deleteRule: .cascade)
            Relationship.toOne("manager", "Manager", inverse: "department", deleteRule: .deny)
        }
        Entity("Employee", identity: "id") {
            Attribute("id", .int64)
            Relationship.toOne("department", "Department", inverse: "employees")
        }
        Entity("Manager", identity: "id") {
            Attribute("id", .int64)
            Relationship.toOne("department", "Department", inverse: "manager")
        }
    }
}

/// A store behaviour that differs from the conformance suite's expectation.
public struct ConformanceFailure: Error, CustomStringConvertible, Sendable {
    /// The check that failed, or nil for a summary of several.
    public let check: StoreConformance.Check?
    /// What differs: the behaviour expected and the one seen; for a summary (``check`` nil), one
    /// line per failed check.
    public let message: String
    /// The source file of the conformance suite where the expectation failed.
    public let file: String
    /// The line of ``file`` where the expectation failed.
    public let line: Int

    /// A failure of `check` (nil for a summary of several), located where it is created.
    public init(check: StoreConformance.Check?, _ message: String, file: String = #fileID, line: Int = #line) {
        self.check = check
        self.message = message
        self.file = file
        self.line = line
    }

    public var description: String {
        check.map { "store conformance check '\($0)' failed (\(file):\(line)): \(message)" } ?? message
    }
}
