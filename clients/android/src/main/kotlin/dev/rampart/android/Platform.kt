package dev.rampart.android

/**
 * The platform adapter: everything the client core ([RampartClient]) needs from the device, as
 * plain interfaces. The core holds the queue, the flush rules, the session and token logic and
 * the allow list; it reaches storage, the app's state, the device's description, the network,
 * the clock and randomness only through a [Platform]. [AndroidPlatform] implements one over the
 * Android SDK; the unit tests implement one in memory with a fake clock and a scripted network,
 * as the React Native library does with its own `Platform`.
 */
interface Platform {
    /** The app's private storage: the event queue, the last app version, the identified user. */
    val storage: KeyValueStorage

    /** Keystore-backed storage: the install id and the session (its key signs tokens). */
    val secureStorage: KeyValueStorage

    /** The app in the foreground or not, and its changes. */
    val appState: AppStateSource

    /** Where automatic screen tracking learns the screen shown, if anywhere. */
    val screens: ScreenSource?

    /** Read once per client; may be slow (package manager, integrity checks). */
    fun deviceInfo(): DeviceInfo

    /** A platform attestation (Play Integrity) to carry with a registration, if the app gives one. */
    fun attestation(): Attestation? = null

    /** One JSON POST, blocking, with the platform's time limit; throws on no answer. */
    fun postJson(url: String, body: String): HttpResponse

    /** Device time, milliseconds since the epoch. */
    fun now(): Long

    /** Cryptographically secure random bytes. */
    fun randomBytes(length: Int): ByteArray

    /** Used only with debug logging on. */
    fun log(message: String)

    /** Stops listening to the system (the client was destroyed). */
    fun close() {}
}

/** A string store; every call is synchronous and may throw (the core logs and carries on). */
interface KeyValueStorage {
    fun get(key: String): String?
    fun set(key: String, value: String)
    fun remove(key: String)
}

enum class AppState { ACTIVE, BACKGROUND }

interface AppStateSource {
    /** The state now (an app started for a background job starts in [AppState.BACKGROUND]). */
    fun current(): AppState

    /** Calls [listener] on every change; returns the function that unsubscribes it. */
    fun subscribe(listener: (AppState) -> Unit): () -> Unit
}

interface ScreenSource {
    /** Calls [listener] with each newly shown screen's name; returns the function that unsubscribes it. */
    fun subscribeScreens(listener: (String) -> Unit): () -> Unit
}

/** What the core reads of an HTTP answer. */
class HttpResponse(val status: Int, val body: String, private val headers: Map<String, String> = emptyMap()) {
    fun header(name: String): String? = headers.entries.firstOrNull { it.key.equals(name, ignoreCase = true) }?.value
}

data class AppInfo(
    /** Package name. */
    val id: String,
    /** The app's label, for the user agent. */
    val name: String,
    /** `versionName`. */
    val version: String,
    /** `versionCode`, in decimal. */
    val build: String?,
)

data class ScreenInfo(val width: Int, val height: Int, val scale: Double)

data class DeviceInfo(
    val osVersion: String,
    val model: String,
    val manufacturer: String?,
    val app: AppInfo,
    val locale: String?,
    val timezone: String?,
    /** Minutes, UTC minus local (JavaScript's `getTimezoneOffset()`). */
    val timezoneOffset: Int?,
    val screen: ScreenInfo?,
    /** The raw `ANDROID_ID`: hashed before it is sent, unless device-ID forwarding is on. */
    val vendorId: String?,
    /** What the device's own checks found (see [Integrity]). */
    val integrity: List<String>,
    val platform: String = "android",
)

/** A platform attestation without a challenge, carried as evidence (Rampart keeps it, and verifies nothing). */
data class Attestation(val kind: String, val token: String)

/**
 * The app's Play Integrity hook (Rampart's docs/mobile.md, "Attestation"). At each registration
 * the client asks Rampart for a challenge and calls [playIntegrityToken] with its binding (base64url
 * SHA-256 of the challenge): the app passes it to the Play Integrity API as the request's `nonce`
 * (classic requests) or `requestHash` (standard requests) and returns the verdict token Google
 * gave, or null to register without one. Called on the client's worker thread, so it may block
 * (`Tasks.await`) for the API's answer.
 */
fun interface AttestationProvider {
    fun playIntegrityToken(binding: String): String?
}
