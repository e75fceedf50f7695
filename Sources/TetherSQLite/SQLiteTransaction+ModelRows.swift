import Foundation
import Tether

/// Typed reads: the attributes a model reads, from the statement into one buffer reused from row
/// to row, without building an `Object` (a dictionary of every attribute) per row.
extension SQLiteTransaction: ModelRowReader {
    package func forEachRow(_ query: Query, attributes: [String], _ row: (ObjectID, [Value?]) throws -> Void) throws -> Bool {
        let info = try info(query.entity)
        try checkQuery(query, info)
        if needsSwift(query, info) { return false }
        let types = try AttributeType.types(of: attributes, in: info.types, entity: query.entity)
        var arguments: [SQLValue] = []
        var sql = "SELECT \(columns(attributes)) FROM \(info.table)"
        if let condition = query.condition {
            sql += " WHERE " + translate(condition, info, &arguments)
        }
        sql += " ORDER BY " + (query.sort.map { "\(quote($0.attribute)) \($0.ascending ? "ASC" : "DESC")" } + ["\"rowid\" ASC"]).joined(separator: ", ")
        if query.limit != nil || query.offset > 0 {
            sql += " LIMIT ? OFFSET ?"
            arguments.append(.int(Int64(query.limit.map { max(0, $0) } ?? -1)))
            arguments.append(.int(Int64(max(0, query.offset))))
        }
        try read(sql, arguments, entity: query.entity, types, row)
        return true
    }

    package func forEachRow(of ids: [ObjectID], entity: String, attributes: [String], _ row: (ObjectID, [Value?]) throws -> Void) throws {
        let info = try info(entity)
        let types = try AttributeType.types(of: attributes, in: info.types, entity: entity)
        try chunked(ids.map(\.rowID)) { chunk in
            try read("SELECT \(columns(attributes)) FROM \(info.table) WHERE \"rowid\" IN (\(placeholders(chunk.count)))",
                     chunk.map { .int($0) }, entity: entity, types, row)
        }
    }

    private func columns(_ attributes: [String]) -> String {
        (["\"rowid\""] + attributes.map(quote)).joined(separator: ", ")
    }

    private func read(_ sql: String, _ arguments: [SQLValue], entity: String, _ types: [AttributeType],
                      _ body: (ObjectID, [Value?]) throws -> Void) throws {
        var values = [Value?](repeating: nil, count: types.count)
        try connection.run(sql, arguments, context: "reading \(entity)") { row in
            for (i, type) in types.enumerated() { values[i] = Codec.decode(row, i + 1, as: type) }
            try body(ObjectID(entity: entity, rowID: row.int(0)), values)
        }
    }
}
