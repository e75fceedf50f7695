import Foundation

extension ModelLayout {
    /// How many to-one relationships a key path may go through.
    static var pathDepth: Int { 3 }

    /// The dotted path (`"repository.owner.login"`) of the attribute a key path through optional
    /// to-one relationships reads (`\.repository?.owner?.login`), or nil.
    ///
    /// Found by probing, as ``name(of:)`` finds a property: models whose to-one relationships
    /// lead to probe models (``ModelProbe/decode(_:markingPath:)``), breadth first up to
    /// ``pathDepth`` relationships deep; the path is the one whose last member, marked, changes
    /// what the key path reads, when it is the only attribute of its model that does (a key
    /// path to the related model itself changes with each of them: nil). Only a path through at least one relationship is taken (a
    /// computed property of the model's own attributes still names nothing).
    func pathName<V: Encodable>(of keyPath: KeyPath<Model, V>) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        func print(_ path: [String]) -> Data?? {
            guard let model = try? ModelProbe(entity: entityName).decode(Model.self, markingPath: path).model else { return nil }
            return .some(try? encoder.encode(model[keyPath: keyPath]))
        }
        var frontier: [(path: [String], destination: any EntityModel.Type)] = members.compactMap { member in
            if case .toOne(let destination) = member.kind { return ([member.name], destination) }
            return nil
        }
        for _ in 0..<Self.pathDepth where !frontier.isEmpty {
            var next: [(path: [String], destination: any EntityModel.Type)] = []
            for (path, destination) in frontier {
                // What the key path reads when the relationships lead to an unmarked model.
                guard let reached = print(path) else { continue }
                var changing: [String] = []
                for member in Self.members(of: destination) {
                    switch member.kind {
                    case .attribute:
                        if let marked = print(path + [member.name]), marked != reached { changing.append(member.name) }
                    case .toOne(let further):
                        next.append((path + [member.name], further))
                    case .toMany:
                        continue
                    }
                }
                // One attribute: the path reads it. More: the key path reads the related model
                // itself (or a value computed from several), which no condition compares.
                if changing.count == 1 { return (path + changing).joined(separator: ".") }
                if changing.count > 1 { return nil }
            }
            frontier = next
        }
        return nil
    }

    /// The members a model type declares, probed.
    private static func members(of type: any EntityModel.Type) -> [ModelMember] {
        func probe<D: EntityModel>(_ type: D.Type) -> [ModelMember] {
            (try? ModelProbe(entity: D.entityName).decode(D.self, marking: nil).members) ?? []
        }
        return probe(type)
    }
}
