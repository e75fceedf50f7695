// swift-tools-version:6.0
import PackageDescription

// TetherPostgres: a Tether store on PostgreSQL, for services that mirror an API from several
// instances into one database. A package of its own, so that the Tether package keeps no
// package dependency: it depends on Tether by path and on postgres-nio.
//
// Layout
//   Sources/TetherPostgres        the store (PostgresStore) over an app's PostgresClient
//   Sources/TetherPostgresBench   the benchmark (tether-postgres-bench)
//   Sources/TetherPostgresExample the example: recorded GitHub issues mirrored by two processes at once
//   Sources/TetherPostgresWorker  the child process of the many-writers and observer tests (not a product)
//   Sources/TetherPostgresTestSupport  what the tests and the worker share: schema, payloads (not a product)
//   Tests/TetherPostgresTests      one Swift Testing target; needs TETHER_POSTGRES_URL (see .ci/postgres.sh)

let package = Package(
    name: "TetherPostgres",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "TetherPostgres", targets: ["TetherPostgres"]),
        .executable(name: "tether-postgres-bench", targets: ["TetherPostgresBench"]),
    ],
    dependencies: [
        .package(name: "Tether", path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        .target(
            name: "TetherPostgres",
            dependencies: [
                .product(name: "Tether", package: "Tether"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The benchmark: 100k repositories against a hand-written postgres-nio importer and the
        // SQLite store (swift run -c release tether-postgres-bench; Docs/PostgreSQL.md).
        .executableTarget(
            name: "TetherPostgresBench",
            dependencies: [
                "TetherPostgres",
                .product(name: "Tether", package: "Tether"),
                .product(name: "TetherSQLite", package: "Tether"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // What the many-writers tests and their child process share: the schema, the payloads,
        // the server's settings from a URL (not a product).
        .target(
            name: "TetherPostgresTestSupport",
            dependencies: [
                .product(name: "Tether", package: "Tether"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The example: the recorded GitHub issues mirrored by two processes at once, read back
        // (swift run TetherPostgresExample; Docs/PostgreSQL.md).
        .executableTarget(
            name: "TetherPostgresExample",
            dependencies: [
                "TetherPostgres",
                .product(name: "Tether", package: "Tether"),
                .product(name: "TetherRails", package: "Tether"),
                .product(name: "TetherTesting", package: "Tether"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The child process of the many-writers and observer tests (not a product).
        .executableTarget(
            name: "TetherPostgresWorker",
            dependencies: [
                "TetherPostgres",
                "TetherPostgresTestSupport",
                .product(name: "Tether", package: "Tether"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "TetherPostgresTests",
            dependencies: [
                "TetherPostgresWorker",
                "TetherPostgresTestSupport",
                "TetherPostgres",
                .product(name: "TetherTesting", package: "Tether"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// CI (`.ci/run`) sets TETHER_WARNINGS_AS_ERRORS=1: a warning in this package's own targets then
// fails the build, as in the Tether package. Never set for an app that depends on it.
let warningsAsErrors = Context.environment["TETHER_WARNINGS_AS_ERRORS"] == "1"

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ] + (warningsAsErrors ? [.unsafeFlags(["-warnings-as-errors"])] : [])
}
