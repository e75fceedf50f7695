import Foundation

extension Client {
    /// The document format of `entity`'s requests (the default one when nil).
    func documentFormat(for entity: String?) -> any DocumentFormat {
        remote.documentFormat(for: entity)
    }

    /// A response body read by `entity`'s document format, then checked as every format's
    /// reading is: a document holding objects none of which carries the entity's identity is an
    /// ``ImportError`` (never an import of nothing, which would clear links or delete what a list
    /// "lacks").
    func document(_ body: JSON, of entity: String, _ operation: DocumentOperation, what: String) throws -> Document {
        guard let entityMapping = mapping[entity] else {
            throw RequestError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
        }
        let request = DocumentRequest(
            entity: entityMapping, mapping: mapping, operation: operation, responseShape: remote.responseShape(for: entity), description: what)
        let document = try documentFormat(for: entity).read(body, request)
        try ResponseShape.checkIdentity(document.objects, entity: entity, identity: request.identityKeyPaths, what: what, shape: "the document")
        for included in document.included where mapping[included.entity] == nil {
            throw ImportError(path: .root, entity: entity, message: "\(what): the document includes objects of '\(included.entity)', which is not an entity of the schema")
        }
        return document
    }

    /// The one object of `entity` in an answer (of a write, a refresh), with what the document
    /// includes beside it. What the format left out is merged as the mapper's diagnostics of
    /// such answers are; under the client's ``ImportOptions/Policy/fail`` it is the error.
    func oneObject(in body: JSON, of entity: String, _ operation: DocumentOperation, what: String) throws -> (JSON, [IncludedObjects]) {
        let (json, document) = try oneObjectDocument(in: body, of: entity, operation, what: what)
        if importOptions.policy == .fail, let first = document.diagnostics.first { throw ImportError(first) }
        return (json, document.included)
    }

    /// The one object of `entity` in an answer, and the whole document (what it includes, its
    /// meta, what the format left out).
    func oneObjectDocument(in body: JSON, of entity: String, _ operation: DocumentOperation, what: String) throws -> (JSON, Document) {
        let document = try document(body, of: entity, operation, what: what)
        guard document.objects.count == 1, let json = document.objects.first else {
            throw ImportError(path: .root, entity: entity, message: "\(what) holds \(document.objects.count) \(entity) objects where one was expected")
        }
        return (json, document)
    }

    /// The one object of `entity` in an answer, read by the entity's document format.
    func oneObject(in body: JSON, of entity: String, what: String) throws -> JSON {
        try oneObject(in: body, of: entity, .item, what: what).0
    }

    /// The payloads of a document's included objects, one array per entity (for
    /// `Importer.run(_:including:in:)`).
    static func payloads(_ included: [IncludedObjects]) -> [(entity: String, json: JSON)] {
        included.map { ($0.entity, JSON.array($0.objects)) }
    }

    /// Imports the objects a document includes beside its primary data, within the caller's
    /// transaction and before the primary data (whose links to them then resolve at once). They
    /// are never deleted for missing from anything. Returns what the import did.
    static func importIncluded(_ included: [IncludedObjects], importer: Importer, in writer: any StoreWriter) throws -> ImportResult? {
        guard !included.isEmpty else { return nil }
        return try importer.run(included.map { ($0.entity, JSON.array($0.objects)) }, in: writer)
    }

    /// The body of a write, by the format of `entity`: `members` (by property name) become the
    /// format's document, sorted by name.
    func writeBody(
        _ operation: DocumentOperation, entity: String, identity: JSON?, members: [DocumentMember], onlyChanges: Bool = false,
        relationship: RelationshipMapping? = nil, targets: [JSON] = []
    ) throws -> JSON {
        guard let entityMapping = mapping[entity] else {
            throw RequestError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
        }
        let write = DocumentWrite(
            operation: operation, entity: entityMapping, mapping: mapping, identity: identity,
            members: members.sorted { $0.name < $1.name }, onlyChanges: onlyChanges, relationship: relationship, targets: targets)
        return try documentFormat(for: entity).body(write)
    }

    /// The identity of an object as JSON (its single identity attribute's value), or nil.
    func identityJSON(of entity: String, values: [String: Value]) -> JSON? {
        guard let identity = mapping[entity]?.identity, identity.count == 1, let value = values[identity[0].name] else { return nil }
        return json(value, of: identity[0])
    }
}
