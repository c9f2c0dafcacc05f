import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import RampartCore

/// A clock the test moves: timers fire when `advance` passes them.
final class FakeClock: RampartClock {
    private let lock = NSLock()
    private var t: Int64
    private var timers: [(at: Int64, id: Int, f: () -> Void)] = []
    private var cancelled = Set<Int>()
    private var next = 0

    init(_ start: Int64 = 1_764_100_000_000) { t = start }

    func now() -> Int64 {
        lock.lock()
        defer { lock.unlock() }
        return t
    }

    func schedule(afterMs ms: Int64, _ callback: @escaping () -> Void) -> Cancellable {
        lock.lock()
        let id = next
        next += 1
        timers.append((t + ms, id, callback))
        lock.unlock()
        return Subscription { [weak self] in
            self?.lock.lock()
            self?.cancelled.insert(id)
            self?.lock.unlock()
        }
    }

    func advance(_ ms: Int64) {
        lock.lock()
        t += ms
        let due = timers.filter { $0.at <= t && !cancelled.contains($0.id) }
        timers.removeAll { $0.at <= t }
        lock.unlock()
        due.forEach { $0.f() }
    }
}

/// One request the fake network received.
struct Sent {
    let url: URL
    let body: [String: Any]
    var path: String { url.path }
    var events: [[String: Any]] { body["events"] as? [[String: Any]] ?? [] }
    var eventTypes: [String] { events.compactMap { $0["type"] as? String } }
}

/// A scripted Rampart: answers registrations with a session and events with 202, unless told otherwise.
final class FakeRampart: HTTPTransport {
    private let lock = NSLock()
    private(set) var sentLog: [Sent] = []
    let clock: FakeClock
    /// Rampart's clock minus the device's.
    var serverAhead: Int64 = 5_000
    var sessionCount = 0
    /// Answers for the events endpoint, used in order before the default 202.
    var eventAnswers: [Result<HTTPResponse, Error>] = []
    var registrationAnswers: [Result<HTTPResponse, Error>] = []
    /// False: every request fails as if the server could not be reached.
    var reachable = true
    /// The events of each batch answered 202, in order.
    private(set) var accepted: [[[String: Any]]] = []
    /// Registrations get no answer at all (a network that swallows requests).
    var silentRegistrations = false
    private var swallowed: [(Result<HTTPResponse, Error>) -> Void] = []

    init(clock: FakeClock) { self.clock = clock }

    var sent: [Sent] {
        lock.lock()
        defer { lock.unlock() }
        return sentLog
    }

    func sent(to path: String) -> [Sent] { sent.filter { $0.path == path } }

    static func json(_ status: Int, _ body: Any, headers: [String: String] = [:]) -> Result<HTTPResponse, Error> {
        .success(HTTPResponse(status: status, headers: headers, body: try! JSONSerialization.data(withJSONObject: body)))
    }

    func post(_ url: URL, headers: [String: String], body: Data, completion: @escaping (Result<HTTPResponse, Error>) -> Void) {
        let parsed = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        lock.lock()
        sentLog.append(Sent(url: url, body: parsed))
        let answer: Result<HTTPResponse, Error>
        if !reachable {
            lock.unlock()
            return DispatchQueue.global().async { completion(.failure(URLError(.cannotConnectToHost))) }
        }
        if url.path.hasSuffix("/v1/client/token") && silentRegistrations {
            swallowed.append(completion)
            lock.unlock()
            return
        }
        if url.path.hasSuffix("/v1/client/token") {
            if !registrationAnswers.isEmpty {
                answer = registrationAnswers.removeFirst()
            } else {
                sessionCount += 1
                answer = FakeRampart.json(201, [
                    "token": "rpt1.x", "expires_in": 300, "session": "rps1.claims\(sessionCount).mac\(sessionCount)",
                    "session_key": "key-\(sessionCount)-abcdefghijklmnopqrstuvwxyz0123456789", "session_expires_in": 86400,
                    "server_time": clock.now() + serverAhead,
                ])
            }
        } else if !eventAnswers.isEmpty {
            answer = eventAnswers.removeFirst()
        } else {
            let events = parsed["events"] as? [[String: Any]] ?? []
            accepted.append(events)
            answer = FakeRampart.json(202, ["accepted": events.count])
        }
        lock.unlock()
        DispatchQueue.global().async { completion(answer) }
    }
}

/// Screens shown by the test, as a view controller's appearance would report them.
final class FakeScreens: ScreenSource {
    private var listeners: [(String) -> Void] = []
    func subscribe(_ listener: @escaping (String) -> Void) -> Cancellable {
        listeners.append(listener)
        return Subscription {}
    }
    func show(_ name: String) { listeners.forEach { $0(name) } }
}

let testPhone = DeviceInfo(
    platform: .ios, osVersion: "17.4", model: "iPhone15,3", manufacturer: "Apple",
    app: .init(id: "com.example.shop", name: "ShopApp", version: "3.2.1", build: "321"),
    locale: "en-GB", timezone: "Europe/London", timezoneOffset: 0,
    screen: ScreenSize(width: 1290, height: 2796, scale: 3), vendorId: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", integrity: [])

/// A phone whose storage outlives the clients made on it (app restarts), over a fake network.
final class TestPhone {
    let clock = FakeClock()
    lazy var rampart = FakeRampart(clock: clock)
    var storage: KeyValueStorage = MemoryStorage()
    var secure: KeyValueStorage = MemoryStorage()
    let appState = ManualAppState(.active)
    let screens = FakeScreens()
    var device = testPhone
    var logs: [String] = []

    func platform() -> GenericPlatform {
        GenericPlatform(storage: storage, secureStorage: secure, appState: appState, screens: screens, device: device, transport: rampart, clock: clock,
                        log: { [weak self] in self?.logs.append($0) })
    }

    func configuration(_ edit: (RampartConfiguration) -> Void = { _ in }) -> RampartConfiguration {
        let c = RampartConfiguration(publishableKey: "pk_test", baseURL: URL(string: "https://rampart.example.com")!)
        c.baseURLAllowList = [URL(string: "https://api.example.com/v1")!]
        edit(c)
        return c
    }

    func open(_ edit: (RampartConfiguration) -> Void = { _ in }) throws -> RampartClient {
        let client = RampartClient(platform: platform())
        try client.configure(configuration(edit))
        XCTAssertTrue(client.idle(timeout: 20))
        return client
    }
}
