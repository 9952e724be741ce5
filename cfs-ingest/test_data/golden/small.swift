import Foundation

/// A session that sends requests.
/// Holds its configuration.
public final class Session: NSObject {
    /// The default session.
    public static let `default` = Session()
    var retries: Int = 0

    init(retries: Int) {
        self.retries = retries
    }

    public func request(_ url: URL) -> DataRequest {
        DataRequest(url: url)
    }

    deinit {}

    subscript(index: Int) -> Int { index }
}

// A protocol for adapters.
protocol RequestAdapter {
    func adapt(_ request: URLRequest) throws -> URLRequest
}

struct Point: Equatable {
    let x: Double
    var y: Double
}

enum Method: String {
    case get, post
    func describe() -> String { rawValue }
}

extension Session: RequestAdapter {
    func adapt(_ request: URLRequest) throws -> URLRequest { request }
}

actor Counter {
    private var value = 0
    func increment() { value += 1 }
}

typealias Handler = (Int) -> Void

func topLevel(x: Int) -> Int { x * 2 }

let globalConstant = 42

extension Array where Element == Int {
    var total: Int { reduce(0, +) }
}
