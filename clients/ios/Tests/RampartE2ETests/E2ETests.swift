// The library against a real Rampart, end to end: test/e2e/ios.test.ts starts Rampart and an app
// backend on the host's loopback, runs this package's tests in the Swift chroot (which shares the
// network) with their addresses in RAMPART_E2E_*, and then checks Rampart's database for what
// this test reports in RAMPART_E2E_REPORT. Without those variables (a plain `swift test`) the
// test is skipped.
//
// An iPhone installs and opens the app (events flushed), shows screens, logs in to the app's
// backend through the Castle-shaped API's URLSession interceptor (the header only on the app's
// API), the backend forwards the header to Rampart and gets an allow with the device, the app
// identifies the user and goes to the background. Then the app is reinstalled (its files gone,
// the Keychain kept, a new identifierForVendor): the same device. Last, a replayed and a forged
// token are refused.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import RampartSDK

private let env = ProcessInfo.processInfo.environment
private let iosUserAgent = "ShopApp/321 CFNetwork/1494.0.7 Darwin/23.4.0"

private func device(vendorId: String) -> DeviceInfo {
    DeviceInfo(platform: .ios, osVersion: "17.4", model: "iPhone15,3", manufacturer: "Apple",
               app: .init(id: "com.example.shop", name: "ShopApp", version: "3.2.1", build: "321"),
               locale: "en-GB", timezone: "Europe/London", timezoneOffset: 0,
               screen: ScreenSize(width: 1290, height: 2796, scale: 3), vendorId: vendorId, integrity: [])
}

/// What a request answered, filled in by its completion handler.
private final class Answer {
    var status = 0
    var body: [String: Any] = [:]
    var error: Error?
}

/// Sends `request` and answers its status and JSON body.
private func send(_ session: URLSession, _ request: URLRequest) throws -> (Int, [String: Any]) {
    let done = DispatchSemaphore(value: 0)
    let answer = Answer()
    session.dataTask(with: request) { data, response, error in
        answer.error = error
        answer.status = (response as? HTTPURLResponse)?.statusCode ?? 0
        answer.body = (data.flatMap { try? JSONSerialization.jsonObject(with: $0) } as? [String: Any]) ?? [:]
        done.signal()
    }.resume()
    XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "no answer from \(request.url?.absoluteString ?? "")")
    if let error = answer.error { throw error }
    return (answer.status, answer.body)
}

private func post(_ url: String, _ body: [String: Any], token: String? = nil) -> URLRequest {
    var r = URLRequest(url: URL(string: url)!)
    r.httpMethod = "POST"
    r.setValue("application/json", forHTTPHeaderField: "Content-Type")
    r.setValue(iosUserAgent, forHTTPHeaderField: "User-Agent")
    if let token { r.setValue(token, forHTTPHeaderField: "X-Service-Client-Id") }
    r.httpBody = try? JSONSerialization.data(withJSONObject: body)
    return r
}

final class E2ETests: XCTestCase {
    func testAnIPhoneAppAgainstTheRealService() throws {
        guard let base = env["RAMPART_E2E_BASE_URL"], let key = env["RAMPART_E2E_PUBLISHABLE_KEY"], let backend = env["RAMPART_E2E_BACKEND"],
              let other = env["RAMPART_E2E_OTHER"], let user = env["RAMPART_E2E_USER"], let reportPath = env["RAMPART_E2E_REPORT"],
              let signature = env["RAMPART_E2E_USER_SIGNATURE"], let jwt = env["RAMPART_E2E_USER_JWT"]
        else { throw XCTSkip("RAMPART_E2E_* are not set: test/e2e/ios.test.ts runs this against a real Rampart") }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("rampart-e2e-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let keychain = FileStorage(directory: root.appendingPathComponent("keychain"))
        let appState = ManualAppState(.active)
        var logs: [String] = []
        let logLock = NSLock()
        func platform(files: String, vendorId: String) -> GenericPlatform {
            GenericPlatform(storage: FileStorage(directory: root.appendingPathComponent(files)), secureStorage: keychain, appState: appState,
                            device: device(vendorId: vendorId), log: { m in print(m); logLock.lock(); logs.append(m); logLock.unlock() })
        }
        let configuration = CastleConfiguration(publishableKey: key, baseURL: URL(string: base)!)
        configuration.baseURLAllowList = [URL(string: "\(backend)/api/")!]
        configuration.debugLoggingEnabled = true
        var report: [String: Any] = [:]

        // Install and open: the lifecycle events reach Rampart at once.
        XCTAssertTrue(Castle.configure(configuration, platform: platform(files: "app-1", vendorId: UUID().uuidString)))
        let client = try XCTUnwrap(Castle.client)
        XCTAssertTrue(client.idle(timeout: 60))
        XCTAssertEqual(Castle.queueSize(), 0, "install and open were sent: \(logs)")

        // Screens wait in the queue; the login through the interceptor flushes them and carries a fresh token.
        Castle.screen("Welcome")
        Castle.screen("Login")
        XCTAssertEqual(Castle.queueSize(), 2)
        let app = URLSession(configuration: Castle.urlSessionInterceptConfiguration())
        let (status, verdict) = try send(app, post("\(backend)/api/login", ["user": user, "password": "right"]))
        XCTAssertEqual(status, 200)
        XCTAssertEqual((verdict["policy"] as? [String: Any])?["action"] as? String, "allow", "\(verdict)")
        let signals = verdict["signals"] as? [String: Any] ?? [:]
        for s in ["bot_behavior", "invalid_token", "no_app_activity", "spoofed_device"] { XCTAssertNil(signals[s], "\(s): \(signals)") }
        let deviceToken = try XCTUnwrap((verdict["device"] as? [String: Any])?["token"] as? String)
        report["deviceToken"] = deviceToken
        XCTAssertTrue((verdict["receivedToken"] as? String ?? "").hasPrefix("rpm1."))

        // The header goes to the app's API only, fresh each time; the wrapper does the same as the protocol.
        let (_, profile) = try send(app, post("\(backend)/api/profile", [:]))
        let wrapped = RampartURLSession(client: client)
        let (_, viaWrapper) = try wrappedSend(wrapped, post("\(backend)/api/profile", [:]))
        let (_, elsewhere) = try send(app, post("\(other)/api/profile", [:]))
        let tokens = [verdict["receivedToken"], profile["receivedToken"], viaWrapper["receivedToken"]].compactMap { $0 as? String }
        XCTAssertEqual(tokens.count, 3)
        XCTAssertEqual(Set(tokens).count, 3, "a fresh token per request")
        XCTAssertNil(elsewhere["receivedToken"], "no token outside the allow list")

        // Identify (with the signature the backend handed over) flushes; close flushes.
        Castle.secure(signature)
        Castle.identify(user)
        XCTAssertTrue(client.idle(timeout: 60))
        Castle.screen("Home")
        appState.emit(.background)
        XCTAssertTrue(client.idle(timeout: 60))
        XCTAssertEqual(Castle.queueSize(), 0, "\(logs)")
        Castle.resetConfiguration()

        // A reinstall: the app's files are gone, the Keychain is not, identifierForVendor is new.
        appState.emit(.active)
        XCTAssertTrue(Castle.configure(configuration, platform: platform(files: "app-2", vendorId: UUID().uuidString)))
        let again = try XCTUnwrap(Castle.client)
        XCTAssertTrue(again.idle(timeout: 60))
        XCTAssertNil(Castle.userId(), "the app's files, and the user with them, are gone")
        Castle.userJwt(jwt)
        XCTAssertTrue(again.idle(timeout: 60))
        XCTAssertEqual(Castle.userId(), user)
        XCTAssertEqual(Castle.queueSize(), 0)
        let app2 = URLSession(configuration: Castle.urlSessionInterceptConfiguration())
        let (_, second) = try send(app2, post("\(backend)/api/login", ["user": user, "password": "right"]))
        XCTAssertEqual((second["policy"] as? [String: Any])?["action"] as? String, "allow", "\(second)")
        XCTAssertEqual((second["device"] as? [String: Any])?["token"] as? String, deviceToken, "a reinstall is the same device")
        report["reinstallDeviceToken"] = (second["device"] as? [String: Any])?["token"]

        // A token serves one login flow: used a fourth time it is a replay. A forged one does not verify.
        let token = try XCTUnwrap(Castle.createRequestToken())
        let plain = URLSession(configuration: .ephemeral)
        var replay: [String: Any] = [:]
        for _ in 0..<4 { replay = try send(plain, post("\(backend)/api/login", ["user": user, "password": "right"], token: token)).1 }
        XCTAssertNotNil((replay["signals"] as? [String: Any])?["replayed_token"], "\(replay)")
        let fresh = try XCTUnwrap(Castle.createRequestToken())
        let forged = String(fresh.dropLast()) + (fresh.hasSuffix("A") ? "B" : "A")
        let (_, forgedVerdict) = try send(plain, post("\(backend)/api/login", ["user": "\(user)-victim", "password": "right"], token: forged))
        XCTAssertEqual(((forgedVerdict["signals"] as? [String: Any])?["invalid_token"] as? [String: Any])?["reason"] as? String, "forged", "\(forgedVerdict)")
        XCTAssertEqual((replay["policy"] as? [String: Any])?["action"] as? String, "deny", "a replayed token is denied: \(replay)")
        XCTAssertEqual((forgedVerdict["policy"] as? [String: Any])?["action"] as? String, "deny", "a forged token is denied: \(forgedVerdict)")
        Castle.resetConfiguration()

        // Never a secret in the debug log: neither the session key nor a whole token.
        logLock.lock()
        let logged = logs.joined(separator: "\n")
        logLock.unlock()
        XCTAssertFalse(logged.contains(token))
        XCTAssertFalse(logged.contains("rpm1."))

        report["user"] = user
        try JSONSerialization.data(withJSONObject: report).write(to: URL(fileURLWithPath: reportPath))
    }

    private func wrappedSend(_ session: RampartURLSession, _ request: URLRequest) throws -> (Int, [String: Any]) {
        let done = DispatchSemaphore(value: 0)
        let answer = Answer()
        session.dataTask(with: request) { data, response, error in
            answer.error = error
            answer.status = (response as? HTTPURLResponse)?.statusCode ?? 0
            answer.body = (data.flatMap { try? JSONSerialization.jsonObject(with: $0) } as? [String: Any]) ?? [:]
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        if let error = answer.error { throw error }
        return (answer.status, answer.body)
    }
}
