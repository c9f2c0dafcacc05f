import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import RampartCore

/// The same cases as the React Native library's (test/unit/react-native/interceptor.spec.ts).
final class AllowListTests: XCTestCase {
    func testTheAllowListMatchesSchemeHostPortAndPathBoundary() throws {
        let list = try AllowList(["https://api.example.com/v1", "http://10.0.2.2:8080"])
        let cases: [(String, Bool)] = [
            ("https://api.example.com/v1", true),
            ("https://api.example.com/v1/", true),
            ("https://api.example.com/v1/login?next=/home#top", true),
            ("HTTPS://API.EXAMPLE.COM:443/v1/login", true),
            ("http://10.0.2.2:8080/anything", true),
            ("https://api.example.com.evil.com/v1/login", false),
            ("https://api.example.com@evil.com/v1/login", false),
            ("https://user:pass@api.example.com/v1/login", false),
            ("https://evil.com/https://api.example.com/v1", false),
            ("https://evil.com/?https://api.example.com/v1", false),
            ("https://evilapi.example.com/v1", false),
            ("https://api.example.com\\@evil.com/v1", false),
            ("https://api.example.com%2eevil.com/v1", false),
            ("https://api.example.com./v1", false),
            ("https://api.example.com /v1", false),
            ("https://api.example.com\t/v1", false),
            ("http://api.example.com/v1/login", false),
            ("https://api.example.com:8443/v1/login", false),
            ("https://api.example.com/v10", false),
            ("https://api.example.com/v2/login", false),
            ("https://api.example.com/", false),
            ("https://api.example.com/v1/../admin", false),
            ("https://api.example.com/v1/%2e%2e/admin", false),
            ("//api.example.com/v1/login", false),
            ("/v1/login", false),
            ("api.example.com/v1", false),
            ("wss://api.example.com/v1", false),
            ("http://10.0.2.2:80/anything", false),
            ("", false),
        ]
        for (url, allowed) in cases {
            XCTAssertEqual(list.allows(url), allowed, url)
        }
        XCTAssertFalse(try AllowList([]).allows("https://api.example.com/v1"))
    }

    func testParsing() {
        XCTAssertEqual(parseHTTPURL("https://API.example.com/v1/x?q"), HTTPURLParts(scheme: "https", host: "api.example.com", port: 443, path: "/v1/x"))
        XCTAssertEqual(parseHTTPURL("http://[::1]:3000"), HTTPURLParts(scheme: "http", host: "[::1]", port: 3000, path: "/"))
        XCTAssertNil(parseHTTPURL("https://a.example:99999/"))
        XCTAssertThrowsError(try AllowList(["not a url"]))
    }

    func testPrepareAddsAFreshTokenOnlyToAllowListedRequestsAndFlushes() throws {
        let phone = TestPhone()
        let client = try phone.open()
        try client.screen("Login")
        func prepared(_ url: String, headers: [String: String] = [:]) -> URLRequest {
            var r = URLRequest(url: URL(string: url)!)
            for (k, v) in headers { r.setValue(v, forHTTPHeaderField: k) }
            let done = expectation(description: url)
            var out = r
            client.prepare(r) { out = $0; done.fulfill() }
            wait(for: [done], timeout: 20)
            return out
        }
        let login = prepared("https://api.example.com/v1/login", headers: ["x-service-client-id": "stale"])
        let token = try XCTUnwrap(login.value(forHTTPHeaderField: "X-Service-Client-Id"))
        XCTAssertTrue(token.hasPrefix("rpm1."))
        XCTAssertEqual(login.allHTTPHeaderFields?.keys.filter { $0.lowercased() == "x-service-client-id" }.count, 1)
        XCTAssertNil(prepared("https://thirdparty.example/collect").value(forHTTPHeaderField: "X-Service-Client-Id"))
        XCTAssertNotEqual(prepared("https://api.example.com/v1/profile").value(forHTTPHeaderField: "X-Service-Client-Id"), token)
        // The allow-listed request flushed the screen (Castle's flushIfNeeded).
        XCTAssertTrue(client.idle())
        XCTAssertEqual(client.queueSize, 0)
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/events").last?.eventTypes, ["screen"])
    }

    func testCastlesHeaderNameCanBeConfigured() throws {
        let phone = TestPhone()
        let client = try phone.open { $0.requestTokenHeaderName = RampartConfiguration.castleRequestTokenHeaderName }
        XCTAssertEqual(client.clientIdHeaderName, "X-Castle-Request-Token")
        let done = expectation(description: "prepared")
        var out: URLRequest?
        client.prepare(URLRequest(url: URL(string: "https://api.example.com/v1/login")!)) { out = $0; done.fulfill() }
        wait(for: [done], timeout: 20)
        XCTAssertNotNil(out?.value(forHTTPHeaderField: "X-Castle-Request-Token"))
    }
}
