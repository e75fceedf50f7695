public import Tether

extension Client.Builder {
    /// Talks JSON:API (jsonapi.org) with builder lines only: kebab-case member names
    /// (``KebabCaseNaming``, unless `naming` says otherwise), the ``JSONAPIFormat`` for every
    /// entity (`application/vnd.api+json` both ways, `included`, `links.next` pages,
    /// linkage, `errors[]`), and the related URL `/<type>/:id/<relationship>` of every
    /// relationship with none registered (`relationshipResource(_:for:of:)`),
    /// which `RelationshipResource` lists and, through `/<type>/:id/relationships/<name>`,
    /// adds to, removes from and replaces.
    ///
    /// `types` names the JSON:API type (and resource path) of entities whose plural is not the
    /// derived one (`["Person": "people"]` is derived already; `["Category": "categories"]`
    /// too; `["Staff": "staff-members"]` is not).
    ///
    /// ```swift
    /// let client = try Client.Builder(models: [Article.self, Person.self, Tag.self, Comment.self])
    ///     .jsonAPI()
    ///     .transport(URLSessionTransport())
    ///     .baseURL(URL(string: "https://blog.example.com/api")!)
    ///     .build()
    /// let articles = try await client.fetchObjects("Article", from: "/articles?include=author,tags")
    /// ```
    ///
    /// `polymorphic` declares the relationships whose linkage names resources of several types,
    /// each held by one relationship per type (``PolymorphicRelationship``); `build()` checks
    /// them. Their relationships share the member's URLs (`/notes/:id/commentable`).
    ///
    /// A relationship's links the server gives (`relationships.tags.links.related`, `.self`)
    /// are used instead of these URLs when the model keeps them in attributes mapped there
    /// (``JSONAPIFormat/relationshipLinks(_:of:)``).
    public func jsonAPI(types: [String: String] = [:], naming: (any NamingStrategy)? = nil, polymorphic: [PolymorphicRelationship] = []) -> Self {
        let naming = naming ?? KebabCaseNaming(resourcePaths: types)
        let format = JSONAPIFormat(types: types, polymorphic: polymorphic)
        var builder = self.naming(naming).documentFormat(format)
        if !polymorphic.isEmpty { builder = builder.extending(with: PolymorphicRelationshipCheck(declarations: polymorphic, format: format)) }
        for entity in schema.entities {
            let type = types[entity.name] ?? naming.resourcePath(for: entity.name)
            let identity = entity.identity.first ?? "id"
            for relationship in entity.relationships where builder.remote.relationshipResources[entity.name]?[relationship.name] == nil {
                let shared = polymorphic.first { $0.entity == entity.name && $0.relationships.contains(relationship.name) }
                let key = shared?.name ?? naming.jsonKey(for: relationship.name, in: entity.name)
                builder = builder.relationshipResource(
                    URLTemplate("/\(type)/:\(naming.jsonKey(for: identity, in: entity.name))/\(key)"), for: relationship.name, of: entity.name)
            }
        }
        return builder
    }
}
