import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import RampartCore

final class ClientTests: XCTestCase {
    func testAFirstLaunchRegistersWithTheDeviceAndSendsTheInstallAndTheOpen() throws {
        let phone = TestPhone()
        let client = try phone.open()
        let registrations = phone.rampart.sent(to: "/v1/client/token")
        XCTAssertEqual(registrations.count, 1)
        let mobile = try XCTUnwrap(registrations[0].body["mobile"] as? [String: Any])
        XCTAssertEqual(registrations[0].body["publishable_key"] as? String, "pk_test")
        XCTAssertEqual(mobile["platform"] as? String, "ios")
        XCTAssertEqual(mobile["model"] as? String, "iPhone15,3")
        XCTAssertEqual(mobile["manufacturer"] as? String, "Apple")
        XCTAssertEqual(mobile["sdk"] as? String, "rampart-ios/\(RampartSDKInfo.version)")
        XCTAssertEqual((mobile["app"] as? [String: String]) ?? [:], ["id": "com.example.shop", "version": "3.2.1", "build": "321"])
        let installId = try XCTUnwrap(mobile["installId"] as? String)
        XCTAssertEqual(installId.count, 22)
        // The vendor id travels hashed with the app's id; the raw one only with forwarding on.
        XCTAssertEqual(mobile["vendorId"] as? String, "0136c815f62244748cb953417f858106cfb2653ec2c03bad86a4563e1699b30c")
        XCTAssertNil(mobile["deviceId"])
        XCTAssertEqual(mobile["userAgent"] as? String, "ShopApp/3.2.1 (321; iPhone15,3; iOS 17.4) rampart-ios/\(RampartSDKInfo.version)")
        XCTAssertEqual(client.userAgent, mobile["userAgent"] as? String)

        let batches = phone.rampart.sent(to: "/v1/client/events")
        XCTAssertEqual(batches.map(\.eventTypes), [["app_installed", "app_opened"]])
        XCTAssertEqual(batches[0].body["session"] as? String, "rps1.claims1.mac1")
        let installed = batches[0].events[0]
        XCTAssertEqual(installed["properties"] as? [String: String], ["version": "3.2.1", "build": "321"])
        // Stamped in Rampart's clock: the device's time plus the offset the registration told.
        XCTAssertEqual(installed["timestamp"] as? String, isoTimestamp(ms: phone.clock.now() + phone.rampart.serverAhead))
        XCTAssertEqual(client.queueSize, 0)
    }

    func testForwardingSendsTheRawVendorId() throws {
        let phone = TestPhone()
        _ = try phone.open { $0.deviceIDAutoForwardingEnabled = true }
        let mobile = phone.rampart.sent(to: "/v1/client/token")[0].body["mobile"] as? [String: Any]
        XCTAssertEqual(mobile?["deviceId"] as? String, "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
    }

    func testScreensWaitForTheFlushLimit() throws {
        let phone = TestPhone()
        let client = try phone.open { $0.flushLimit = 3 }
        try client.screen("Welcome")
        try client.screen("Login")
        XCTAssertTrue(client.idle())
        XCTAssertEqual(client.queueSize, 2)
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/events").count, 1)
        try client.screen("Home")
        XCTAssertTrue(client.idle())
        XCTAssertEqual(client.queueSize, 0)
        let last = try XCTUnwrap(phone.rampart.sent(to: "/v1/client/events").last)
        XCTAssertEqual(last.events.compactMap { $0["name"] as? String }, ["Welcome", "Login", "Home"])
    }

    func testTheQueueKeepsTheNewestUpToItsLimit() throws {
        let phone = TestPhone()
        phone.rampart.eventAnswers = Array(repeating: .failure(URLError(.notConnectedToInternet)), count: 10)
        let client = try phone.open { $0.maxQueueLimit = 3 }
        for name in ["A", "B", "C", "D"] { try client.screen(name) }
        XCTAssertEqual(client.queueSize, 3)
        phone.rampart.eventAnswers = []
        client.flush()
        XCTAssertTrue(client.idle())
        let names = phone.rampart.sent(to: "/v1/client/events").last?.events.compactMap { $0["name"] as? String }
        XCTAssertEqual(names, ["B", "C", "D"])
    }

    func testIdentifyFlushesAndLaterEventsCarryTheUserAndOnlyTheirOwnSignature() throws {
        let phone = TestPhone()
        let client = try phone.open()
        let sig = String(repeating: "ab", count: 32)
        try client.secure(sig)
        try client.identify("42", traits: ["email": "u@example.com", "age": 30, "nested": ["x": 1]])
        XCTAssertTrue(client.idle())
        let identify = try XCTUnwrap(phone.rampart.sent(to: "/v1/client/events").last?.events.last)
        XCTAssertEqual(identify["type"] as? String, "identify")
        XCTAssertEqual(identify["user_id"] as? String, "42")
        XCTAssertEqual(identify["user_signature"] as? String, sig)
        XCTAssertEqual((identify["properties"] as? [String: Any])?.keys.sorted(), ["age", "email"])
        try client.screen("Home")
        // Another user: the first one's signature must not travel with their events.
        try client.identify("43")
        XCTAssertTrue(client.idle())
        let events = phone.rampart.sent(to: "/v1/client/events").last?.events ?? []
        XCTAssertEqual(events.map { $0["user_id"] as? String }, ["42", "43"])
        XCTAssertEqual(events.map { $0["user_signature"] as? String }, [sig, nil])
        XCTAssertEqual(client.userId, "43")
        XCTAssertNil(client.userSignature)
        XCTAssertThrowsError(try client.secure("not-hex"))
        XCTAssertThrowsError(try client.identify(""))
    }

    func testUserJwtIdentifiesTheUserItNamesWithTheJwtOnTheIdentifyOnly() throws {
        let phone = TestPhone()
        let client = try phone.open()
        let payload = RampartCrypto.base64URL(Array(#"{"id":"u-7","email":"seven@example.com"}"#.utf8))
        let jwt = "eyJhbGciOiJIUzI1NiJ9.\(payload).c2ln"
        try client.userJwt(jwt)
        XCTAssertTrue(client.idle())
        let identify = phone.rampart.sent(to: "/v1/client/events").last?.events.last
        XCTAssertEqual(identify?["user_id"] as? String, "u-7")
        XCTAssertEqual(identify?["user_jwt"] as? String, jwt)
        try client.screen("Home")
        client.flush()
        XCTAssertTrue(client.idle())
        let screen = phone.rampart.sent(to: "/v1/client/events").last?.events.last
        XCTAssertEqual(screen?["user_id"] as? String, "u-7")
        XCTAssertNil(screen?["user_jwt"])
        XCTAssertThrowsError(try client.userJwt("not a jwt"))
        XCTAssertEqual(userIdOfJwt("a.\(RampartCrypto.base64URL(Array(#"{"sub":42}"#.utf8))).c"), "42")
        XCTAssertNil(userIdOfJwt("a.\(RampartCrypto.base64URL(Array(#"{"id":true}"#.utf8))).c"))
    }

    func testCustomEventsCarryTheirNameAndProperties() throws {
        let phone = TestPhone()
        let client = try phone.open()
        try client.custom(name: "Added to cart", properties: ["sku": "A-1", "price": 9.5, "gift": true])
        client.flush()
        XCTAssertTrue(client.idle())
        let e = phone.rampart.sent(to: "/v1/client/events").last?.events.last
        XCTAssertEqual(e?["type"] as? String, "custom")
        XCTAssertEqual(e?["name"] as? String, "Added to cart")
        XCTAssertEqual((e?["properties"] as? [String: Any])?["price"] as? Double, 9.5)
    }

    func testCloseFlushesAndARestartIsNoNewInstallWithTheSameInstallId() throws {
        let phone = TestPhone()
        let first = try phone.open()
        try first.screen("Home")
        phone.appState.emit(.background)
        XCTAssertTrue(first.idle())
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/events").last?.eventTypes, ["screen", "app_closed"])
        first.destroy()

        phone.appState.emit(.active)
        let second = try phone.open()
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/events").last?.eventTypes, ["app_opened"])
        // The stored session is reused (younger than an hour): no second registration.
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/token").count, 1)
        second.destroy()

        // A new version: an update, with the previous one.
        phone.device.app.version = "3.3.0"
        let third = try phone.open()
        let update = phone.rampart.sent(to: "/v1/client/events").last?.events.first
        XCTAssertEqual(update?["type"] as? String, "app_updated")
        XCTAssertEqual((update?["properties"] as? [String: String])?["previous_version"], "3.2.1")
        third.destroy()
    }

    func testAnOpenAfterAnHourRegistersAgainAndAReinstallKeepsTheInstallId() throws {
        let phone = TestPhone()
        let first = try phone.open()
        let installId = (phone.rampart.sent(to: "/v1/client/token")[0].body["mobile"] as? [String: Any])?["installId"] as? String
        phone.appState.emit(.background)
        XCTAssertTrue(first.idle())
        phone.clock.advance(3_700_000)
        phone.appState.emit(.active)
        XCTAssertTrue(first.idle())
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/token").count, 2)
        first.destroy()

        // A reinstall: the app's files are gone, the Keychain is not.
        phone.storage = MemoryStorage()
        _ = try phone.open()
        let registrations = phone.rampart.sent(to: "/v1/client/token")
        XCTAssertEqual((registrations.last?.body["mobile"] as? [String: Any])?["installId"] as? String, installId)
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/events").last?.eventTypes, ["app_installed", "app_opened"])
    }

    func testTokensAreFreshSignedAndInRampartsClock() throws {
        let phone = TestPhone()
        let client = try phone.open()
        let a = try XCTUnwrap(client.createRequestToken())
        let b = try XCTUnwrap(client.createRequestToken())
        XCTAssertNotEqual(a, b)
        let parts = a.split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 6)
        XCTAssertEqual(parts[0], "rpm1")
        XCTAssertEqual(parts[1...2].joined(separator: "."), "claims1.mac1")
        XCTAssertEqual(Int64(parts[3]), phone.clock.now() + phone.rampart.serverAhead)
        XCTAssertEqual(parts[4].count, 22)
        let signed = parts[0...4].joined(separator: ".")
        XCTAssertEqual(parts[5], RampartCrypto.hmacSHA256Base64URL(key: "key-1-abcdefghijklmnopqrstuvwxyz0123456789", message: signed))
    }

    func testMintingMatchesTheServersRule() {
        // Computed with Node's crypto from docs/mobile.md §2.
        XCTAssertEqual(
            mintToken(session: "rps1.eyJlIjoiZW52XzEiLCJzIjoic2Vzc18xIn0.c2Vzc2lvbi1tYWM", key: "q3Nf2xT8yZp0LmV7cR4wE9uJ6hB1aK5sD8gF2jH0kL3",
                      t: 1_764_100_800_000, nonce: "AbCdEfGhIjKlMnOpQrStUv"),
            "rpm1.eyJlIjoiZW52XzEiLCJzIjoic2Vzc18xIn0.c2Vzc2lvbi1tYWM.1764100800000.AbCdEfGhIjKlMnOpQrStUv.oR45loKuFvALcEylUQ2Wm60ZigaMJ4WOOaq4sUAXCqU")
        // Keys and messages are UTF-8.
        XCTAssertEqual(RampartCrypto.hmacSHA256Base64URL(key: "ключ🔑", message: "naïve ✓"), "-zBlYzd75qwLzeW7BW_SVVyEffjZjWaXKdicrMTRy9c")
    }

    func testNoTokenWithoutASessionAndOneOnceRegistered() throws {
        let phone = TestPhone()
        phone.rampart.registrationAnswers = [.failure(URLError(.notConnectedToInternet))]
        let client = try phone.open()
        XCTAssertNil(client.createRequestToken())
        XCTAssertTrue(client.idle())
        // The nil started a registration in the background: the next call has a token.
        XCTAssertNotNil(client.createRequestToken())
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/events").count, 0, "the launch's events wait for the next trigger")
        XCTAssertEqual(client.queueSize, 2)
    }

    func testARefusedSessionIsReplacedAndTheBatchSentOnce() throws {
        let phone = TestPhone()
        phone.rampart.eventAnswers = [FakeRampart.json(422, ["type": "invalid_request_token", "message": "x", "fields": [["field": "session", "message": "does not verify"]]])]
        let client = try phone.open()
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/token").count, 2)
        let batches = phone.rampart.sent(to: "/v1/client/events")
        XCTAssertEqual(batches.map { $0.body["session"] as? String }, ["rps1.claims1.mac1", "rps1.claims2.mac2"])
        XCTAssertEqual(client.queueSize, 0)
    }

    func testEventsTheServerNamesAreDroppedAndTheRestSent() throws {
        let phone = TestPhone()
        let client = try phone.open { $0.flushLimit = 100 }
        try client.screen("A")
        try client.custom(name: "B")
        try client.screen("C")
        phone.rampart.eventAnswers = [FakeRampart.json(422, ["type": "invalid_parameters", "fields": [["field": "events.1.type", "message": "must be one of …"]]])]
        client.flush()
        XCTAssertTrue(client.idle())
        let batches = phone.rampart.sent(to: "/v1/client/events")
        XCTAssertEqual(batches.suffix(2).map { $0.events.compactMap { $0["name"] as? String } }, [["A", "B", "C"], ["A", "C"]])
        XCTAssertEqual(client.queueSize, 0)
    }

    func testFailuresKeepTheEventsAndRateLimitsWaitForRetryAfter() throws {
        let phone = TestPhone()
        phone.rampart.eventAnswers = [FakeRampart.json(503, [:])]
        let client = try phone.open()
        XCTAssertEqual(client.queueSize, 2)
        phone.rampart.eventAnswers = [FakeRampart.json(429, [:], headers: ["Retry-After": "30"])]
        client.flush()
        XCTAssertTrue(client.idle())
        XCTAssertEqual(client.queueSize, 2)
        let before = phone.rampart.sent(to: "/v1/client/events").count
        client.flush()
        XCTAssertTrue(client.idle())
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/events").count, before, "nothing is sent before Retry-After")
        phone.clock.advance(30_000)
        XCTAssertTrue(client.idle())
        XCTAssertEqual(client.queueSize, 0)
        XCTAssertEqual(phone.rampart.sent(to: "/v1/client/events").count, before + 1)
        // Another 4xx: the batch can never be accepted and is dropped.
        try client.screen("X")
        phone.rampart.eventAnswers = [FakeRampart.json(400, ["type": "bad_request"])]
        client.flush()
        XCTAssertTrue(client.idle())
        XCTAssertEqual(client.queueSize, 0)
    }

    func testTheQueueSurvivesAProcessKillInItsFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rampart-queue-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let phone = TestPhone()
        phone.storage = FileStorage(directory: dir)
        phone.rampart.eventAnswers = Array(repeating: .failure(URLError(.notConnectedToInternet)), count: 3)
        let first = try phone.open()
        try first.screen("Offline")
        XCTAssertTrue(first.idle())
        XCTAssertEqual(first.queueSize, 3)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.appendingPathComponent("rampart.queue").path))
        first.destroy() // the process dies: nothing else is written

        phone.storage = FileStorage(directory: dir)
        phone.rampart.eventAnswers = []
        let second = try phone.open()
        let sent = phone.rampart.sent(to: "/v1/client/events").last
        XCTAssertEqual(sent?.eventTypes, ["app_installed", "app_opened", "screen", "app_opened"])
        XCTAssertEqual(second.queueSize, 0)
    }

    func testConfigurationIsValidated() {
        let phone = TestPhone()
        let bad: [(RampartConfiguration) -> Void] = [
            { $0.flushLimit = 0 },
            { $0.maxQueueLimit = 0 },
            { $0.clientIdHeaderName = "bad header" },
            { $0.baseURLAllowList = [URL(string: "ftp://api.example.com/")!] },
            { $0.baseURL = URL(string: "file:///tmp")! },
        ]
        for edit in bad {
            XCTAssertThrowsError(try RampartClient(platform: phone.platform()).configure(phone.configuration(edit)))
        }
        XCTAssertThrowsError(try RampartClient(platform: phone.platform()).configure(RampartConfiguration(publishableKey: "sk_secret", baseURL: URL(string: "https://r.example")!)))
        let client = RampartClient(platform: phone.platform())
        XCTAssertThrowsError(try client.screen("Home")) { XCTAssertEqual($0 as? RampartError, .notConfigured("screen")) }
        XCTAssertNoThrow(try client.configure(phone.configuration()))
        XCTAssertThrowsError(try client.configure(phone.configuration())) { XCTAssertEqual($0 as? RampartConfigurationError, .alreadyConfigured) }
        let defaults = phone.configuration()
        XCTAssertTrue(defaults.screenTrackingEnabled)
        XCTAssertFalse(defaults.deviceIDAutoForwardingEnabled)
        XCTAssertFalse(defaults.debugLoggingEnabled)
        XCTAssertEqual(defaults.flushLimit, 20)
        XCTAssertEqual(defaults.maxQueueLimit, 1000)
        XCTAssertTrue(client.idle())
    }

    func testAutomaticScreenTrackingIsOnByDefaultAndSkipsRepeats() throws {
        let phone = TestPhone()
        let client = try phone.open()
        phone.screens.show("Home")
        phone.screens.show("Home")
        phone.screens.show("Cart")
        XCTAssertTrue(client.idle())
        XCTAssertEqual(client.queueSize, 2)
        client.destroy()

        let off = TestPhone()
        let quiet = try off.open { $0.screenTrackingEnabled = false }
        off.screens.show("Home")
        XCTAssertTrue(quiet.idle())
        XCTAssertEqual(quiet.queueSize, 0)
    }

    func testATokenRequestGivesUpAfterItsDeadlineWhenNoSessionComes() throws {
        let phone = TestPhone()
        phone.rampart.silentRegistrations = true
        let client = RampartClient(platform: phone.platform())
        try client.configure(phone.configuration())
        let answered = expectation(description: "answered")
        var token: String? = "unset"
        client.createRequestToken(timeoutMs: 3000) { token = $0; answered.fulfill() }
        client.q.sync {}
        phone.clock.advance(2999)
        XCTAssertEqual(token, "unset")
        phone.clock.advance(1)
        wait(for: [answered], timeout: 20)
        XCTAssertNil(token)
        XCTAssertEqual(client.queueSize, 2, "the launch's events wait for a session")
    }
}
