public import Observation
import Synchronization

/// Typed live results as an `@Observable` object, the way SwiftUI reads data (as SwiftData's
/// and GRDBQuery's `@Query` do): it follows a ``ModelObservation`` from the moment it is made,
/// on the main actor, and a view that reads ``models`` or ``sections`` is redrawn when they
/// change. The async sequence (`for try await results in observation`) stays for code that
/// wants each state and its difference.
///
/// ```swift
/// @State var issues = LiveResults(try client.observe(Issue.self, sortedBy: [.ascending(\.number)],
///                                                     sectionedBy: \.repository?.fullName))
///
/// List(issues.sections, id: \.range) { section in ... }
/// ```
///
/// It stops following when it is released, or with ``stop()``. A failure (a store read that
/// fails, a query the store refuses) ends it and is kept in ``error``.
@MainActor
@Observable
public final class LiveResults<Model: EntityModel> {
    /// The models, in the result's order (empty until the first state is read).
    public private(set) var models: [Model] = []
    /// The models by section (one section without a section key).
    public private(set) var sections: [ModelSection<Model>] = []
    /// How the last state differs from the one before.
    public private(set) var difference = ResultsDifference()
    /// For a remote-backed observation, the state of its source (loading, last refreshed, last
    /// error); nil otherwise.
    public private(set) var remoteState: RemoteState?
    /// Whether the first state has been read.
    public private(set) var isLoaded = false
    /// Why the observation ended, if it failed.
    public private(set) var error: (any Error)?

    /// The observation followed.
    @ObservationIgnored public let observation: ModelObservation<Model>
    @ObservationIgnored private let follower = Follower()

    /// Follows `observation` from now on.
    public init(_ observation: ModelObservation<Model>) {
        self.observation = observation
        follower.start { [weak self] in
            do {
                for try await results in observation {
                    guard let self else { return }
                    self.show(results)
                }
            } catch {
                self?.error = error
            }
        }
    }

    private func show(_ results: ModelResults<Model>) {
        models = results.models
        sections = results.sections
        difference = results.difference
        if remoteState != results.remoteState { remoteState = results.remoteState }
        if !isLoaded { isLoaded = true }
    }

    /// Changes the condition and the sort of the observation
    /// (``ModelObservation/change(where:sortedBy:)``); the object shows the new result when it
    /// is read.
    public func change(where predicate: ModelPredicate<Model>?, sortedBy sort: [ModelSort<Model>]? = nil) throws {
        try observation.change(where: predicate, sortedBy: sort)
    }

    /// Refreshes a remote-backed observation from its source now.
    public func refresh() async throws { try await observation.refresh() }

    /// Stops following the observation; what it shows stays.
    public func stop() { follower.stop() }
}

/// The task that follows an observation for a ``LiveResults``, cancelled when the object goes
/// (a main-actor object's deinit cannot reach its main-actor state).
private final class Follower: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)

    @MainActor
    func start(_ body: @escaping @MainActor () async -> Void) {
        let started = Task { @MainActor in await body() }
        task.withLock { $0 = started }
    }

    func stop() { task.withLock { $0?.cancel() } }

    deinit { task.withLock { $0?.cancel() } }
}
