import Foundation
public import Tether


/// The behaviour every ``Store`` must have, as a suite any store can run: the built-in
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
        case prepare
        case insertUpdateClearDelete
        case writeErrors
        case identityLookupInt
        case identityLookupString
        case identityLookupComposite
        case fetchConditions
        case sortLimitOffsetCount
        case toOne
        case toMany
        case orderedToMany
        case manyToMany
        case oneToOne
        case withoutInverse
        case deleteRemovesLinks
        case relationshipErrors
        case relatedBatch
        case deleteRules
        case rollback
        case readDuringWrite
        case waitingOffThePool
        case changeSets
        case valuesRoundTrip
        case batchInsert
        case batchUpdate
        case findByIdentity
        case compareByIdentity
        case observedResults
        case remoteRecords
        case linkBatches

        public var description: String { rawValue }
    }

    let makeStore: @Sendable () throws -> any Store

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
    public let message: String
    public let file: String
    public let line: Int

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
