// The header on the app's own requests: a fresh request token, in the configured header, on
// every request whose URL is under the base-URL allow list, and on no other. Three ways in:
//
// - `RampartClient.prepare(_:completion:)`: the request as it should go out (for any HTTP stack);
// - `RampartURLSession`: a URLSession wrapper whose requests are prepared first;
// - `RampartURLProtocol`: a URLProtocol for `URLSessionConfiguration.protocolClasses` (Castle's
//   `urlSessionInterceptConfiguration()`), which prepares and sends allow-listed requests and
//   leaves all others to the next protocol.
//
// A request to an allow-listed URL also flushes the queue (Castle's `flushIfNeeded`), so the
// app's events reach Rampart before the backend asks for a verdict. When no session exists yet,
// the request waits up to 3 s for the first registration, then goes without the header.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension RampartClient {
    /// `request` with the token header when its URL is allow-listed (any spelling of the header it
    /// had is replaced); unchanged otherwise. `completion` runs on any thread.
    public func prepare(_ request: URLRequest, completion: @escaping (URLRequest) -> Void) {
        guard let url = request.url, isAllowlistURL(url) else { return completion(request) }
        flushIfNeeded(url)
        let name = clientIdHeaderName
        createRequestToken(timeoutMs: tokenWaitMs) { token in
            guard let token else { return completion(request) }
            var r = request
            if let fields = r.allHTTPHeaderFields {
                for k in fields.keys where k.caseInsensitiveCompare(name) == .orderedSame && k != name { r.setValue(nil, forHTTPHeaderField: k) }
            }
            r.setValue(token, forHTTPHeaderField: name)
            completion(r)
        }
    }
}

/// A URLSession whose requests carry the token header when their URL is allow-listed.
public final class RampartURLSession {
    public let session: URLSession
    private let client: RampartClient

    public init(client: RampartClient, session: URLSession = URLSession(configuration: .default)) {
        self.client = client
        self.session = session
    }

    /// Prepares `request`, then sends it as `URLSession.dataTask(with:completionHandler:)` does.
    public func dataTask(with request: URLRequest, completionHandler: @escaping (Data?, URLResponse?, Error?) -> Void) {
        client.prepare(request) { [session] prepared in
            session.dataTask(with: prepared, completionHandler: completionHandler).resume()
        }
    }

    /// Prepares `request`, then sends it.
    @available(iOS 13.0, macOS 10.15, *)
    public func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        try await withCheckedThrowingContinuation { cont in
            dataTask(with: request) { data, response, error in
                if let error { return cont.resume(throwing: error) }
                guard let response else { return cont.resume(throwing: URLError(.badServerResponse)) }
                cont.resume(returning: (data ?? Data(), response))
            }
        }
    }
}

/// For `URLSessionConfiguration.protocolClasses`: takes the allow-listed requests of the client
/// in `RampartURLProtocol.rampart`, adds the header and sends them on a plain session.
open class RampartURLProtocol: URLProtocol {
    private static let handledKey = "RampartURLProtocolHandled"
    private static let lock = NSLock()
    nonisolated(unsafe) private static var current: RampartClient?
    private static let forward = URLSession(configuration: .default)
    private var forwarded: URLSessionDataTask?

    /// The client whose allow list and tokens the protocol uses (set by `Rampart.configure`).
    public static var rampart: RampartClient? {
        get {
            lock.lock()
            defer { lock.unlock() }
            return current
        }
        set {
            lock.lock()
            current = newValue
            lock.unlock()
        }
    }

    override open class func canInit(with request: URLRequest) -> Bool {
        guard URLProtocol.property(forKey: handledKey, in: request) == nil, let client = rampart, let url = request.url else { return false }
        return client.isAllowlistURL(url)
    }

    override open class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override open func startLoading() {
        guard let client = RampartURLProtocol.rampart else {
            self.client?.urlProtocol(self, didFailWithError: URLError(.cancelled))
            return
        }
        var outgoing = request
        // A URLProtocol gets the body as a stream (Apple's and Linux's URLSession alike): read it back.
        if outgoing.httpBody == nil, let stream = outgoing.httpBodyStream {
            outgoing.httpBodyStream = nil
            outgoing.httpBody = RampartURLProtocol.read(stream)
        }
        // Off URLSession's work queue: preparing may wait for the client's queue.
        let ready = outgoing
        DispatchQueue.global().async { self.send(ready, through: client) }
    }

    private func send(_ outgoing: URLRequest, through client: RampartClient) {
        client.prepare(outgoing) { prepared in
            let marked = (prepared as NSURLRequest).mutableCopy() as! NSMutableURLRequest
            URLProtocol.setProperty(true, forKey: RampartURLProtocol.handledKey, in: marked)
            let task = RampartURLProtocol.forward.dataTask(with: marked as URLRequest) { data, response, error in
                if let error {
                    self.client?.urlProtocol(self, didFailWithError: error)
                    return
                }
                if let response { self.client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed) }
                if let data, !data.isEmpty { self.client?.urlProtocol(self, didLoad: data) }
                self.client?.urlProtocolDidFinishLoading(self)
            }
            self.forwarded = task
            task.resume()
        }
    }

    static func read(_ stream: InputStream) -> Data {
        var data = Data()
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n <= 0 { break }
            data.append(buffer, count: n)
        }
        return data
    }

    override open func stopLoading() {
        forwarded?.cancel()
    }
}
