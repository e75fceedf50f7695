import Foundation
import Testing
import Tether

/// The core of schema migrations: conversions, and stores that do not apply steps.
@Suite struct SchemaMigrationCoreTests {
    static let schema = try! Schema {
        Entity("User", identity: "id") { Attribute("id", .int64); Attribute("login", .string) }
    }

    /// A store that does not apply migration steps: it has only the protocol's default.
    final class PlainStore: Store {
        let inner = InMemoryStore()
        func prepare(for schema: Schema) throws { try inner.prepare(for: schema) }
        func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T { try await inner.read(body) }
        func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T { try await inner.write(body) }
        func changes() -> AsyncStream<ChangeSet> { inner.changes() }
    }

    @Test func aStoreThatDoesNotApplyStepsRefusesThemByName() throws {
        let migrations = [SchemaMigration("2-handle", [.renameAttribute(entity: "User", from: "nick", to: "login")])]
        do {
            _ = try Client.Builder(schema: Self.schema).store(PlainStore()).migrations(migrations).build()
            Issue.record("a store without migrations ignored a step")
        } catch let error as ConfigurationError {
            #expect(error.entity == "User")
            #expect(error.member == "nick")
            #expect(error.message.contains("PlainStore does not apply schema migration steps: migration '2-handle' (renameAttribute(User.nick → login))"), "\(error.message)")
        }
        // Without steps, it is prepared as before.
        _ = try Client.Builder(schema: Self.schema).store(PlainStore()).migrations([SchemaMigration("empty", [])]).build()
        _ = try Client.Builder(schema: Self.schema).store(PlainStore()).build()
    }

    @Test func anInMemoryStoreStartsInTheSchemasShape() async throws {
        let migrations = [SchemaMigration("2-handle", [.renameAttribute(entity: "User", from: "nick", to: "login")])]
        let client = try Client.Builder(schema: Self.schema).migrations(migrations).build()
        #expect(try await client.count(Query("User")) == 0)
        #expect(throws: ConfigurationError.self) {
            _ = try Client.Builder(schema: Self.schema).migrations(migrations + migrations).build()
        }
    }

    @Test func standardConversionsAreExact() throws {
        let standard = MigrationConversion.standard
        #expect(try standard.convert(.string("42"), to: .int64) == .int(42))
        #expect(try standard.convert(.int(42), to: .string) == .string("42"))
        #expect(try standard.convert(.int(42), to: .double) == .double(42))
        #expect(try standard.convert(.double(42), to: .int32) == .int(42))
        #expect(try standard.convert(.string("2.5"), to: .double) == .double(2.5))
        #expect(try standard.convert(.double(2.5), to: .string) == .string("2.5"))
        #expect(try standard.convert(.string("2.50"), to: .decimal) == .decimal(Decimal(string: "2.5")!))
        #expect(try standard.convert(.int(1), to: .bool) == .bool(true))
        #expect(try standard.convert(.string("true"), to: .bool) == .bool(true))
        #expect(try standard.convert(.string("https://example.com/a"), to: .url) == .url(URL(string: "https://example.com/a")!))
        #expect(try standard.convert(.string("2024-05-01T10:00:00Z"), to: .date) == .date(Date(timeIntervalSince1970: 1_714_557_600)))
        #expect(try standard.convert(.int(1_714_557_600), to: .date) == .date(Date(timeIntervalSince1970: 1_714_557_600)))
        #expect(try standard.convert(.date(Date(timeIntervalSince1970: 1_714_557_600)), to: .string) == .string("2024-05-01T10:00:00Z"))
        #expect(try standard.convert(.date(Date(timeIntervalSince1970: 1_714_557_600.25)), to: .string) == .string("2024-05-01T10:00:00.250Z"))
        #expect(try standard.convert(.string("0.1"), to: .double) == .double(0.1))
        #expect(try standard.convert(.string("1e3"), to: .double) == .double(1000))
        #expect(try standard.convert(.decimal(Decimal(string: "19.99")!), to: .double) == .double(19.99))
        #expect(try standard.convert(.string("-12"), to: .int16) == .int(-12))
        for (value, type) in [(Value.string("4x"), AttributeType.int64), (.double(4.5), .int64), (.int(70_000), .int16),
                              (.string("maybe"), .bool), (.string("not-a-uuid"), .uuid), (.string("May 1"), .date), (.int(2), .bool),
                              (.string("007"), .int64), (.string("+7"), .int32), (.string(" 7"), .int64), (.string("12abc"), .decimal),
                              (.string("1.00000000000000000001"), .double), (.decimal(Decimal(string: "0.1000000000000000000001")!), .double),
                              (.date(Date(timeIntervalSince1970: 0.0001)), .string)] {
            #expect(throws: MigrationConversion.Failure.self, "\(value) → \(type)") { try standard.convert(value, to: type) }
            #expect(try standard.nullifyingFailures.convert(value, to: type) == nil)
        }
    }

    @Test func dateFormatAndCustomConversions() throws {
        let format = MigrationConversion.dateFormat("dd/MM/yyyy")
        #expect(try format.convert(.string("01/05/2024"), to: .date) == .date(Date(timeIntervalSince1970: 1_714_521_600)))
        #expect(try format.convert(.date(Date(timeIntervalSince1970: 1_714_521_600)), to: .string) == .string("01/05/2024"))
        #expect(throws: MigrationConversion.Failure.self) { try format.convert(.string("2024-05-01"), to: .date) }
        #expect(try format.convert(.string("7"), to: .int64) == .int(7))
        let custom = MigrationConversion.custom { value in
            guard case .string(let s) = value else { return nil }
            return .int(Int64(s.count))
        }
        #expect(try custom.convert(.string("abc"), to: .int64) == .int(3))
        #expect(try custom.convert(.int(1), to: .int64) == nil)
        // A result the new type does not hold is a failure too.
        #expect(throws: MigrationConversion.Failure.self) { try custom.convert(.string("abc"), to: .string) }
    }
}
