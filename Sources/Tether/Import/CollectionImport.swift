import Foundation

extension Importer {
    /// Converts a JSON value (not null) to the stored value of an array, map or JSON attribute:
    /// each element as an attribute of the element type would be (the client's date formats,
    /// integer ranges, lossless coercion when the import allows it), or the JSON as it is. An
    /// element that does not convert rejects the whole value, naming the element: nothing of it
    /// is kept in part.
    func collectionValue(_ json: JSON, for attribute: Attribute, dates: DateDecoding?) -> Result<Value, Rejection> {
        func element(_ json: JSON, _ type: AttributeType, _ place: String) -> Result<Value, Rejection> {
            if json.isNull {
                return .failure(Rejection(.invalidValue, "\(place) is null; an element of \(attribute.type) is a value"))
            }
            switch value(json, for: Attribute(attribute.name, type), dates: dates) {
            case .success(let value): return .success(value)
            case .failure(let rejection): return .failure(Rejection(rejection.problem, "\(place): \(rejection.message)"))
            }
        }
        switch attribute.type {
        case .array(let type):
            guard case .array(let elements) = json else {
                return .failure(Rejection(.typeMismatch, "expected \(attribute.type), found \(json.typeName) \(json)"))
            }
            var values: [Value] = []
            values.reserveCapacity(elements.count)
            for (i, e) in elements.enumerated() {
                switch element(e, type, "element \(i)") {
                case .success(let value): values.append(value)
                case .failure(let rejection): return .failure(rejection)
                }
            }
            return .success(.array(values))
        case .map(let type):
            guard case .object(let members) = json else {
                return .failure(Rejection(.typeMismatch, "expected \(attribute.type), found \(json.typeName) \(json)"))
            }
            var values: [String: Value] = [:]
            values.reserveCapacity(members.count)
            for key in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                switch element(members[key]!, type, "the value of '\(key)'") {
                case .success(let value): values[key] = value
                case .failure(let rejection): return .failure(rejection)
                }
            }
            return .success(.map(values))
        case .json:
            if let problem = CollectionValues.problem(in: .json(json)) {
                return .failure(Rejection(.invalidValue, "cannot keep \(problem)"))
            }
            return .success(.json(json))
        default:
            return .failure(Rejection(.typeMismatch, "\(attribute.type) is not an array, map or JSON type"))
        }
    }
}
