// swift-tools-version:6.0
import Foundation
import PackageDescription

// Tether's benchmark suite: its own package so that the Tether package itself stays free of
// dependencies (GRDB, the typed-fetch rows' comparison, is the benchmark's alone). Run it from this folder:
//
//     swift run -c release tether-bench            # N = 1k, 10k, 100k
//     swift run -c release tether-bench --smoke    # N = 1k once (CI)
//     swift run -c release tether-bench --help
//
// See Docs/Performance.md for the numbers and how to read them.

// SwiftPM names a path dependency after its folder (the checkout may be called `tether`, `main`, ...).
let tetherPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased()

let package = Package(
    name: "TetherBenchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tether-bench", targets: ["TetherBench"]),
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // The system SQLite for the hand-written baseline (Apple platforms use the SDK's SQLite3).
        .systemLibrary(
            name: "BenchSQLite3",
            path: "Sources/BenchSQLite3",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .executableTarget(
            name: "TetherBench",
            dependencies: [
                .product(name: "Tether", package: tetherPackage),
                .product(name: "TetherSQLite", package: tetherPackage),
                .product(name: "TetherJSONAPI", package: tetherPackage),
                .product(name: "GRDB", package: "GRDB.swift"),
                .target(name: "BenchSQLite3", condition: .when(platforms: [.linux, .android, .windows, .openbsd])),
            ],
            path: "Sources/TetherBench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
