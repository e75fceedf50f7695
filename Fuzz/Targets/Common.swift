// The entry points of the fuzz binary, and what the targets share.
//
// Fuzz/build.sh compiles Tether's sources and every file here into one binary (one module, so the
// targets reach internal API, and Tether is compiled once for both targets); the target is chosen
// by the name the binary is run as (Fuzz/.build/parser and Fuzz/.build/import are links to it)
// or by TETHER_FUZZ_TARGET.

import Foundation

enum FuzzTarget: String {
    case parser, `import`
}

nonisolated(unsafe) var selectedTarget = FuzzTarget.parser

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>) -> CInt {
    let invokedAs = argv.pointee[0].map { URL(fileURLWithPath: String(cString: $0)).lastPathComponent } ?? ""
    let name = ProcessInfo.processInfo.environment["TETHER_FUZZ_TARGET"] ?? invokedAs
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(Data("run as Fuzz/.build/parser or Fuzz/.build/import, or set TETHER_FUZZ_TARGET (not \(name))\n".utf8))
        exit(2)
    }
    selectedTarget = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: size > 0 ? data : nil, count: size)
    switch selectedTarget {
    case .parser:
        ParserOracle.check(bytes)
    case .import:
        let data = Data(buffer: bytes)
        blocking { await ImportOracle.check(data) }
    }
    return 0
}

/// Runs `body` as a task and waits for it (libFuzzer calls the target on a thread of its own,
/// not one of Swift's pool).
func blocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}

/// Stops the fuzzer with a description of the disagreement (libFuzzer saves the input).
func fail(_ what: String, _ data: Data, _ detail: String) -> Never {
    let shown = data.count <= 2000 ? String(decoding: data, as: UTF8.self).debugDescription : "\(data.count) bytes"
    FileHandle.standardError.write(Data("DISAGREEMENT: \(what)\n  input: \(shown)\n  \(detail.prefix(4000))\n".utf8))
    fatalError(what)
}
