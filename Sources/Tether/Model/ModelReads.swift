import Foundation
import Synchronization

/// The attribute values (and to-one targets) this client handed out as typed models, per object,
/// for the life of the client: what a struct may have been read with.
///
/// A struct is a copy: read, kept by the app, changed, saved. Meanwhile the store may have moved
/// on (a list refresh brought another client's change). Its properties then hold two kinds of
/// values that differ from the store: those the app set, and those it was read with that the
/// store has since replaced. A typed save (``Client/save(_:options:depth:)``) must write and send
/// only the first kind: a property whose value differs from the store's and is one this client
/// handed out for it is the struct's age, not the app's change, and the store's newer value
/// stays (and is not sent over the other client's).
///
/// A typed save that succeeds forgets the object's states: the model it returns is the app's
/// copy from then on (and an earlier value the app sets again is its change, not staleness).
///
/// Bounded: the states of at most ``capacity`` objects (the oldest forgotten first), and at most
/// ``statesPerObject`` distinct states of each. A struct of a forgotten object is compared with
/// the store, as a struct the app made itself.
final class ModelReads: Sendable {
    /// One state of one object as a typed read decoded it.
    struct State: Sendable, Equatable {
        enum Attributes: Sendable, Equatable {
            /// The attributes a row read held, by position among `names`.
            case row(names: [String], values: [Value?])
            /// Every set attribute of the object.
            case object([String: Value])
        }

        var attributes: Attributes
        /// The targets of the to-one relationships the read followed (depth above 0; nil: none).
        var toOne: [String: ObjectID?]

        init(_ attributes: Attributes, toOne: [String: ObjectID?] = [:]) {
            self.attributes = attributes
            self.toOne = toOne
        }

        /// The value read for `name` (`.some(nil)`: read as unset), or nil when the read did
        /// not hold it.
        func value(of name: String) -> Value?? {
            switch attributes {
            case .row(let names, let values):
                guard let index = names.firstIndex(of: name) else { return nil }
                return .some(values[index])
            case .object(let values):
                return .some(values[name])
            }
        }

        /// Whether the read found the to-one relationship `name` leading to `target`.
        func leads(_ name: String, to target: ObjectID) -> Bool {
            if case .some(.some(let read)) = toOne[name] { return read == target }
            return false
        }
    }

    private struct Memory {
        var states: [ObjectID: [State]] = [:]
        /// The objects in the order they were first remembered (`head` onwards are live).
        var order: [ObjectID] = []
        var head = 0
    }

    let capacity: Int
    let statesPerObject: Int
    private let memory = Mutex(Memory())

    init(capacity: Int = 50_000, statesPerObject: Int = 8) {
        self.capacity = max(1, capacity)
        self.statesPerObject = max(1, statesPerObject)
    }

    /// Remembers what a typed read handed out.
    func record(_ reads: [(ObjectID, State)]) {
        guard !reads.isEmpty else { return }
        memory.withLock { memory in
            for (id, state) in reads {
                if var states = memory.states[id] {
                    guard !states.contains(state) else { continue }
                    states.append(state)
                    if states.count > statesPerObject { states.removeFirst(states.count - statesPerObject) }
                    memory.states[id] = states
                } else {
                    memory.states[id] = [state]
                    memory.order.append(id)
                    while memory.states.count > capacity, memory.head < memory.order.count {
                        memory.states[memory.order[memory.head]] = nil
                        memory.head += 1
                    }
                    if memory.head > 1024, memory.head * 2 > memory.order.count {
                        memory.order.removeFirst(memory.head)
                        memory.head = 0
                    }
                }
            }
        }
    }

    /// The states of `id` handed out (oldest first); empty when none is remembered.
    func states(of id: ObjectID) -> [State] {
        memory.withLock { $0.states[id] ?? [] }
    }

    /// Forgets every state of `id`: the app has saved it, and the model the save returns (read
    /// next) is what it now holds.
    func forget(_ id: ObjectID) {
        memory.withLock { _ = $0.states.removeValue(forKey: id) }
    }

    /// Forgets the values read for `properties` of `id`: the app has just written them, so an
    /// earlier value of theirs is no longer another writer's newer one hidden by a stale copy.
    func forget(_ properties: Set<String>, of id: ObjectID) {
        guard !properties.isEmpty else { return }
        memory.withLock { memory in
            guard let states = memory.states[id] else { return }
            memory.states[id] = states.map { state in
                var state = state
                state.toOne = state.toOne.filter { !properties.contains($0.key) }
                switch state.attributes {
                case .row(let names, let values):
                    let kept = names.indices.filter { !properties.contains(names[$0]) }
                    state.attributes = .row(names: kept.map { names[$0] }, values: kept.map { values[$0] })
                case .object(let values):
                    // Absent keys read as unset: drop the properties from what this state says.
                    let names = values.keys.filter { !properties.contains($0) }.sorted()
                    state.attributes = .row(names: names, values: names.map { values[$0] })
                }
                return state
            }
        }
    }
}
