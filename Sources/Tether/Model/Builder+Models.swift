
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
