// swift-tools-version:6.0
import PackageDescription

// Tether: a JSON REST API tied to a local object store.
//
// Layout
//   Sources/Tether            the core: schema, objects, JSON, the six protocols, the import engine,
//                             the in-memory store and the builder (Foundation only)
//   Sources/TetherSQLite      the SQLite store (system libsqlite3 through CSQLite on Linux, SQLite3 on Apple)
//   Sources/TetherURLSession  the URLSession transport
//   Sources/TetherTesting     test doubles users need too: stub and replay transports, store conformance suite, query differential
//   Strategies/<Name>         one module per mapping strategy, each depending only on the core
//                             (JSONAPI: a document format, with its kebab-case naming)
//   Examples/<Name>           runnable programs
//   Tests/<Module>Tests       one Swift Testing target per module; Tests/TestSupport holds the
//                             helpers they share (not a product)
//
// The package has no package dependencies.

let package = Package(
    name: "Tether",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Tether", targets: ["Tether"]),
        .library(name: "TetherRails", targets: ["TetherRails"]),
        .library(name: "TetherEntityMapper", targets: ["TetherEntityMapper"]),
        .library(name: "TetherKeyPaths", targets: ["TetherKeyPaths"]),
        .library(name: "TetherRouteTable", targets: ["TetherRouteTable"]),
        .library(name: "TetherJSONAPI", targets: ["TetherJSONAPI"]),
        .library(name: "TetherSQLite", targets: ["TetherSQLite"]),
        .library(name: "TetherURLSession", targets: ["TetherURLSession"]),
        .library(name: "TetherTesting", targets: ["TetherTesting"]),
    ],
    targets: [
        // Core
        .target(name: "Tether"),

        // Stores and transports
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(
            name: "TetherSQLite",
            dependencies: [
                "Tether",
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows, .openbsd])),
            ]
        ),
        .target(name: "TetherURLSession", dependencies: ["Tether"]),
        .target(name: "TetherTesting", dependencies: ["Tether"]),

        // Strategies
        .target(name: "TetherRails", dependencies: ["Tether"], path: "Strategies/Rails"),
        .target(name: "TetherEntityMapper", dependencies: ["Tether"], path: "Strategies/EntityMapper"),
        .target(name: "TetherKeyPaths", dependencies: ["Tether"], path: "Strategies/KeyPaths"),
        .target(name: "TetherRouteTable", dependencies: ["Tether"], path: "Strategies/RouteTable"),
        .target(name: "TetherJSONAPI", dependencies: ["Tether"], path: "Strategies/JSONAPI"),

        // Examples
        .executableTarget(
            name: "GitHubImport",
            dependencies: ["Tether", "TetherRails", "TetherSQLite"],
            path: "Examples/GitHubImport",
            resources: [.copy("Resources")]
        ),
        .executableTarget(
            name: "GitHubClient",
            dependencies: ["Tether", "TetherRails", "TetherSQLite", "TetherTesting", "TetherURLSession"],
            path: "Examples/GitHubClient",
            resources: [.copy("Resources")]
        ),
        .executableTarget(
            name: "LiveList",
            dependencies: ["Tether", "TetherSQLite", "TetherURLSession"],
            path: "Examples/LiveList"
        ),
        .executableTarget(
            name: "Tasks",
            dependencies: ["Tether", "TetherEntityMapper", "TetherURLSession"],
            path: "Examples/Tasks"
        ),
        .executableTarget(
            name: "Blog",
            dependencies: ["Tether", "TetherJSONAPI", "TetherURLSession"],
            path: "Examples/Blog"
        ),
        .executableTarget(
            name: "Departments",
            dependencies: ["Tether", "TetherSQLite"],
            path: "Examples/Departments"
        ),
        .executableTarget(
            name: "Offline",
            dependencies: ["Tether", "TetherSQLite", "TetherURLSession"],
            path: "Examples/Offline"
        ),
        .executableTarget(
            name: "Routes",
            dependencies: ["Tether", "TetherRouteTable", "TetherURLSession"],
            path: "Examples/Routes"
        ),

        // Tests: one Swift Testing target per module
        // Helpers the test targets share (a seeded generator, the test servers; child processes
        // are TetherTesting's ChildProcess); not a product.
        .target(name: "TetherTestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "TetherTests", dependencies: ["Tether", "TetherTesting", "TetherTestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(name: "TetherSQLiteTests", dependencies: ["TetherSQLite", "TetherTesting", "TetherTestSupport", "TetherURLSession", "SQLiteCrashHelper"]),
        // The child process the SQLite durability tests kill (not a product).
        .executableTarget(name: "SQLiteCrashHelper", dependencies: ["Tether", "TetherSQLite", "TetherURLSession"], path: "Tests/SQLiteCrashHelper"),
        .testTarget(name: "TetherURLSessionTests", dependencies: ["TetherURLSession", "TetherTesting", "TetherRails", "TetherTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "TetherTestingTests", dependencies: ["TetherTesting"]),
        .testTarget(name: "TetherRailsTests", dependencies: ["TetherRails", "TetherTesting", "TetherSQLite"], resources: [.copy("Fixtures")]),
        .testTarget(name: "TetherEntityMapperTests", dependencies: ["TetherEntityMapper", "TetherRails", "TetherTesting"]),
        .testTarget(name: "TetherKeyPathsTests", dependencies: ["TetherKeyPaths", "TetherTesting", "TetherSQLite"]),
        .testTarget(name: "TetherRouteTableTests", dependencies: ["TetherRouteTable", "TetherTesting"]),
        .testTarget(
            name: "TetherJSONAPITests",
            dependencies: ["TetherJSONAPI", "TetherTesting", "TetherSQLite", "TetherURLSession", "TetherTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// CI (`.ci/run`) sets TETHER_WARNINGS_AS_ERRORS=1 for every build it makes: a warning in any of
// the package's own targets then fails the build, on a cold build as on a warm one (the changed
// flag recompiles what was built without it). Never set for an app that depends on Tether.
let warningsAsErrors = Context.environment["TETHER_WARNINGS_AS_ERRORS"] == "1"

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ] + (warningsAsErrors ? [.unsafeFlags(["-warnings-as-errors"])] : [])
}
