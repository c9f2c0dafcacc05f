// The shared test vectors (clients/test-vectors, computed by the server's and the reference
// client's code), read table by table: token minting byte for byte, the allow list, and the
// queue's scenarios played through the client over the fake platform.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import RampartCore

private let vectors = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("test-vectors")

private func load(_ name: String) throws -> [String: Any] {
    let data = try Data(contentsOf: vectors.appendingPathComponent(name))
    return try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// A JSON value as the wire would carry it, for comparing what was sent with what a vector says.
private func canonical(_ value: Any) -> String {
    let data = try! JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
    return String(decoding: data, as: UTF8.self)
}

final class VectorTests: XCTestCase {
    func testMintingMatchesEveryTokenVector() throws {
        let rpm1 = try XCTUnwrap(try load("tokens.json")["rpm1"] as? [String: Any])
        let cases = try XCTUnwrap(rpm1["mint"] as? [[String: Any]])
        XCTAssertFalse(cases.isEmpty)
        for c in cases {
            let name = c["name"] as? String ?? "?"
            let deviceTime = try XCTUnwrap((c["device_time"] as? NSNumber)?.doubleValue)
            let offset = try XCTUnwrap((c["offset"] as? NSNumber)?.int64Value)
            let t = tokenTime(deviceTimeMs: deviceTime, offsetMs: offset)
            XCTAssertEqual(t, (c["t"] as? NSNumber)?.int64Value, name)
            let token = mintToken(session: try XCTUnwrap(c["session"] as? String), key: try XCTUnwrap(c["session_key"] as? String),
                                  t: t, nonce: try XCTUnwrap(c["nonce"] as? String))
            XCTAssertEqual(token, c["token"] as? String, name)
        }
    }

    func testTheAllowListMatchesEveryVector() throws {
        let file = try load("allow-list.json")
        let cases = try XCTUnwrap(file["cases"] as? [[String: Any]])
        XCTAssertFalse(cases.isEmpty)
        for c in cases {
            let allow = try XCTUnwrap(c["allow"] as? [String])
            let url = try XCTUnwrap(c["url"] as? String)
            XCTAssertEqual(try AllowList(allow).allows(url), c["sent"] as? Bool, "\(allow) \(url): \(c["why"] ?? "")")
        }
        for entry in try XCTUnwrap(file["invalid_entries"] as? [String]) {
            XCTAssertThrowsError(try AllowList([entry]), entry)
        }
    }

    func testTheQueuePlaysEveryScenario() throws {
        let file = try load("queue.json")
        let app = try XCTUnwrap(file["app"] as? [String: String])
        let scenarios = try XCTUnwrap(file["scenarios"] as? [[String: Any]])
        XCTAssertFalse(scenarios.isEmpty)
        for scenario in scenarios {
            try play(scenario, app: app)
        }
    }

    private func play(_ scenario: [String: Any], app: [String: String]) throws {
        let name = scenario["name"] as? String ?? "?"
        let options = scenario["options"] as? [String: Any] ?? [:]
        let phone = TestPhone()
        phone.device.app.version = app["version"] ?? "0"
        phone.device.app.build = app["build"]
        var client: RampartClient?
        var seen = 0
        defer { client?.destroy() }
        for (i, step) in (scenario["steps"] as? [[String: Any]] ?? []).enumerated() {
            let at = "\(name), step \(i + 1) (\(step["op"] as? String ?? "?"))"
            switch step["op"] as? String {
            case "launch":
                if let installed = step["installed"] as? [String: String] {
                    try phone.storage.set(StorageKeys.app, canonical(installed))
                }
                phone.appState.emit((step["foreground"] as? Bool ?? true) ? .active : .background)
                let c = RampartClient(platform: phone.platform())
                try c.configure(phone.configuration { config in
                    if let n = options["flushLimit"] as? Int { config.flushLimit = n }
                    if let n = options["maxQueueLimit"] as? Int { config.maxQueueLimit = n }
                    if let list = options["baseURLAllowList"] as? [String] { config.baseURLAllowList = list.compactMap(URL.init(string:)) }
                })
                client = c
            case "screen":
                let repeatCount = step["repeat"] as? Int ?? 1
                // Idle after each view, as between steps (the vectors' generator does the same).
                for n in 1...repeatCount {
                    let c = try XCTUnwrap(client)
                    try c.screen((step["name"] as? String ?? "").replacingOccurrences(of: "{i}", with: String(n)))
                    XCTAssertTrue(c.idle(timeout: 30), at)
                }
            case "custom":
                var properties: [String: Any]?
                if let raw = step["properties"] {
                    let decoded = try JSONDecoder().decode(EventProperties.self, from: JSONSerialization.data(withJSONObject: raw))
                    properties = decoded.mapValues { v -> Any in
                        switch v {
                        case .string(let s): return s
                        case .number(let d): return d
                        case .bool(let b): return b
                        }
                    }
                }
                try XCTUnwrap(client).custom(name: step["name"] as? String ?? "", properties: properties)
            case "identify":
                try XCTUnwrap(client).identify(step["user_id"] as? String ?? "")
            case "user_jwt":
                try XCTUnwrap(client).userJwt(step["jwt"] as? String ?? "")
            case "request":
                let sent = expectation(description: at)
                try XCTUnwrap(client).prepare(URLRequest(url: try XCTUnwrap(URL(string: step["url"] as? String ?? "")))) { _ in sent.fulfill() }
                wait(for: [sent], timeout: 30)
            case "reset":
                try XCTUnwrap(client).reset()
            case "background":
                phone.appState.emit(.background)
            case "foreground":
                phone.appState.emit(.active)
            case "flush":
                try XCTUnwrap(client).flush()
            case "server":
                phone.rampart.reachable = step["accepting"] as? Bool ?? true
            case "expect":
                let batches = phone.rampart.accepted[seen...].map { batch in batch.map { e -> [String: Any] in
                    var e = e
                    e["timestamp"] = nil
                    return e
                } }
                seen = phone.rampart.accepted.count
                XCTAssertEqual(canonical(Array(batches)), canonical(step["batches"] ?? []), at)
                XCTAssertEqual(client?.queueSize ?? 0, step["queue_size"] as? Int, at)
            default:
                XCTFail("\(at): an op this test does not know")
            }
            if let c = client { XCTAssertTrue(c.idle(timeout: 30), at) }
        }
    }
}
