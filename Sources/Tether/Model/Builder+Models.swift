
/// The builder's per-entity registrations, named by model type and key path instead of strings:
///
/// ```swift
/// let client = try Client.Builder(models: [User.self, Repository.self, Issue.self])
///     .resource("/repos/:repository.fullName/issues", item: "/repos/:repository.fullName/issues/:number", for: Issue.self)
///     .relationshipResource("/users/:login/repos", for: \User.repositories)
///     .pathAttribute(\Repository.fullName)
///     .build()
/// ```
///
/// A key path that reads no coded property of its model is a ``ModelError`` thrown by `build()`.
extension Client.Builder {
    /// How many rows of typed reads the client remembers: 200,000 by default (the newest read
    /// is always remembered, whatever its size).
    ///
    /// A typed save sends only what the app changed in a struct, not the values the struct was
    /// read with that the store has replaced since (another client's change brought by a
    /// refresh): for that the client keeps what its typed reads handed out, as they handed it out
    /// (a read of the same objects with the same values as a kept one, such as a list polled
    /// while nothing changed, adds nothing). Past the limit, the oldest read is forgotten, and a
    /// struct read then is compared with the store, as one the app made itself. An app that keeps
    /// structs for long while it reads many other rows raises it; memory grows with the values
    /// kept.
    ///
    /// ```swift
    /// builder.rememberedReads(1_000_000)
    /// ```
    public func rememberedReads(_ rows: Int) -> Self {
        var copy = self
        copy.rememberedReadLimit = max(1, rows)
        return copy
    }

    /// ``resource(_:item:for:)-(_,_,String)`` for `type`'s entity.
    public func resource<M: EntityModel>(_ collection: URLTemplate, item: URLTemplate? = nil, for type: M.Type) -> Self {
        resource(collection, item: item, for: M.entityName)
    }

    /// ``relationshipResource(_:for:of:)-(_,String,_)`` for the to-many relationship at `keyPath`.
    public func relationshipResource<M: EntityModel, D: EntityModel>(
        _ template: URLTemplate, for keyPath: any KeyPath<M, [D]> & Sendable
    ) -> Self {
        resolving(keyPath, for: "relationshipResource") { builder, name in
            builder.relationshipResource(template, for: name, of: M.entityName)
        }
    }

    /// ``pathAttribute(_:of:)-(String,_)`` for the string property at `keyPath` (GitHub's `fullName`).
    public func pathAttribute<M: EntityModel>(_ keyPath: any KeyPath<M, String> & Sendable) -> Self {
        resolving(keyPath, for: "pathAttribute") { builder, name in builder.pathAttribute(name, of: M.entityName) }
    }

    /// ``pathAttribute(_:of:)-(String,_)`` for the optional string property at `keyPath`.
    public func pathAttribute<M: EntityModel>(_ keyPath: any KeyPath<M, String?> & Sendable) -> Self {
        resolving(keyPath, for: "pathAttribute") { builder, name in builder.pathAttribute(name, of: M.entityName) }
    }

    /// A transport for `type`'s entity, overriding the default.
    public func transport<M: EntityModel>(_ transport: some Transport, for type: M.Type) -> Self {
        self.transport(transport, for: M.entityName)
    }

    /// How saves of `type`'s entity are sent (see ``saveMethod(_:for:)-(_,String?)``).
    public func saveMethod<M: EntityModel>(_ method: HTTPMethod, for type: M.Type) -> Self {
        saveMethod(method, for: M.entityName)
    }

    /// Where the objects are in the responses of `type`'s resources (see ``ResponseShape``).
    public func responseShape<M: EntityModel>(_ shape: ResponseShape, for type: M.Type) -> Self {
        responseShape(shape, for: M.entityName)
    }

    private func resolving<M: EntityModel, V>(
        _ keyPath: any KeyPath<M, V> & Sendable, for use: String, _ register: (Self, String) -> Self
    ) -> Self where V: Encodable {
        do {
            let name = try modelLayouts.layout(of: M.self).requireName(of: keyPath, for: use)
            return register(self, name)
        } catch {
            var copy = self
            copy.deferredErrors.append(error)
            return copy
        }
    }
}
