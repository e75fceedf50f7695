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
    public func jsonAPI(types: [String: String] = [:], naming: (any NamingStrategy)? = nil) -> Self {
        let naming = naming ?? KebabCaseNaming(resourcePaths: types)
        var builder = self.naming(naming).documentFormat(JSONAPIFormat(types: types))
        for entity in schema.entities {
            let type = types[entity.name] ?? naming.resourcePath(for: entity.name)
            let identity = entity.identity.first ?? "id"
            for relationship in entity.relationships where builder.remote.relationshipResources[entity.name]?[relationship.name] == nil {
                let key = naming.jsonKey(for: relationship.name, in: entity.name)
                builder = builder.relationshipResource(
                    URLTemplate("/\(type)/:\(naming.jsonKey(for: identity, in: entity.name))/\(key)"), for: relationship.name, of: entity.name)
            }
        }
        return builder
    }
}
