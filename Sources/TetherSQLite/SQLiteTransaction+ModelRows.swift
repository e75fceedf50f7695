import Foundation
import Tether

/// Typed reads: the attributes a model reads (and the foreign keys of its to-one relationships),
/// from the statement into one buffer reused from row to row, without building an `Object` (a
/// dictionary of every attribute) per row.
extension SQLiteTransaction: ModelRowReader {
    package func rowRelationships(of entity: String, among relationships: [String]) -> [String] {
        relationships.filter { name in
            guard let (link, sideA) = try? relationship(entity, name), sideA, link.aToOne,
                  case .foreignKey = link.storage
            else { return false }
            return true
        }
    }

    package func forEachRow(_ query: Query, attributes: [String], toOne: [String], _ row: (ObjectID, [Value?]) throws -> Void) throws -> Bool {
        let info = try info(query.entity)
        let paths = try checkQuery(query, info)
        if try needsSwift(query, paths) { return false }
        let types = try AttributeType.types(of: attributes, in: info.types, entity: query.entity)
        let (sql, arguments) = try select(try columns(info, attributes, toOne), query, info, paths)
        try read(sql, arguments, entity: query.entity, types, toOne.count, row)
        return true
    }

    package func forEachRow(of ids: [ObjectID], entity: String, attributes: [String], toOne: [String],
                            _ row: (ObjectID, [Value?]) throws -> Void) throws {
        let info = try info(entity)
        let types = try AttributeType.types(of: attributes, in: info.types, entity: entity)
        let columns = try columns(info, attributes, toOne).map(quote).joined(separator: ", ")
        try chunked(ids.map(\.rowID)) { chunk in
            try read("SELECT \(columns) FROM \(info.table) WHERE \"rowid\" IN (\(placeholders(chunk.count)))",
                     chunk.map { .int($0) }, entity: entity, types, toOne.count, row)
        }
    }

    /// `rowid`, the attributes' columns, then the foreign key columns of `toOne` (unquoted names).
    private func columns(_ info: Layout.EntityInfo, _ attributes: [String], _ toOne: [String]) throws -> [String] {
        for name in toOne where rowRelationships(of: info.entity.name, among: [name]).isEmpty {
            throw StoreError(.unsupported, entity: info.entity.name, member: name, "\(info.entity.name).\(name) is not kept in the row")
        }
        return ["rowid"] + attributes + toOne
    }

    private func read(_ sql: String, _ arguments: [SQLValue], entity: String, _ types: [AttributeType], _ toOne: Int,
                      _ body: (ObjectID, [Value?]) throws -> Void) throws {
        var values = [Value?](repeating: nil, count: types.count + toOne)
        try connection.run(sql, arguments, context: "reading \(entity)") { row in
            for (i, type) in types.enumerated() { values[i] = Codec.decode(row, i + 1, as: type) }
            for i in types.count..<(types.count + toOne) { values[i] = row.isNull(i + 1) ? nil : .int(row.int(i + 1)) }
            try body(ObjectID(entity: entity, rowID: row.int(0)), values)
        }
    }
}
