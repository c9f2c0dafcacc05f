package dev.rampart.android

import org.json.JSONArray
import org.json.JSONObject
import java.io.File
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.atomic.AtomicLong

/** Storage in memory. */
class MemoryStorage : KeyValueStorage {
    val data = ConcurrentHashMap<String, String>()
    override fun get(key: String): String? = data[key]
    override fun set(key: String, value: String) { data[key] = value }
    override fun remove(key: String) { data.remove(key) }
}

/** The app in the foreground or not, as the test says. */
class FakeAppState(@Volatile var state: AppState = AppState.ACTIVE) : AppStateSource {
    private val listeners = CopyOnWriteArrayList<(AppState) -> Unit>()
    override fun current(): AppState = state
    override fun subscribe(listener: (AppState) -> Unit): () -> Unit {
        listeners.add(listener)
        return { listeners.remove(listener) }
    }
    fun emit(s: AppState) {
        state = s
        listeners.forEach { it(s) }
    }
}

class FakeScreens : ScreenSource {
    private val listeners = CopyOnWriteArrayList<(String) -> Unit>()
    override fun subscribeScreens(listener: (String) -> Unit): () -> Unit {
        listeners.add(listener)
        return { listeners.remove(listener) }
    }
    fun show(name: String) = listeners.forEach { it(name) }
}

val PHONE = DeviceInfo(
    osVersion = "14", model = "Pixel 8", manufacturer = "Google",
    app = AppInfo("com.example.shop", "ShopApp", "3.2.1", "321"),
    locale = "en-GB", timezone = "Europe/London", timezoneOffset = 0,
    screen = ScreenInfo(1080, 2400, 2.625), vendorId = "9774d56d682e549c", integrity = emptyList(),
)

/**
 * A phone with a scripted Rampart: registrations answer a session, event uploads answer 202 and
 * are recorded while [accepting], and fail as a network error otherwise. [answer] overrides.
 */
class FakePlatform(
    override val storage: KeyValueStorage = MemoryStorage(),
    override val secureStorage: KeyValueStorage = MemoryStorage(),
    override val appState: FakeAppState = FakeAppState(),
    override val screens: FakeScreens? = FakeScreens(),
    var device: DeviceInfo = PHONE,
) : Platform {
    val clock = AtomicLong(1_795_636_800_000L)
    /** Rampart's clock minus the phone's. */
    var serverSkew = 0L
    @Volatile var accepting = true
    val registrations = CopyOnWriteArrayList<JSONObject>()
    val batches = CopyOnWriteArrayList<JSONArray>()
    val requests = CopyOnWriteArrayList<Pair<String, JSONObject>>()
    val logs = CopyOnWriteArrayList<String>()
    @Volatile var answer: ((String, JSONObject) -> HttpResponse?)? = null
    private var sessions = 0

    override fun deviceInfo(): DeviceInfo = device

    override fun postJson(url: String, body: String): HttpResponse {
        val json = JSONObject(body)
        requests.add(url to json)
        answer?.invoke(url, json)?.let { return it }
        if (!accepting) throw java.io.IOException("offline")
        return if (url.endsWith("/v1/client/token")) {
            registrations.add(json)
            sessions++
            HttpResponse(201, JSONObject()
                .put("token", "rpt1.x.y").put("expires_in", 300)
                .put("session", "rps1.session$sessions.mac").put("session_key", "key-$sessions")
                .put("session_expires_in", 86_400).put("server_time", now() + serverSkew).toString())
        } else {
            batches.add(json.getJSONArray("events"))
            HttpResponse(202, """{"accepted":${json.getJSONArray("events").length()}}""")
        }
    }

    override fun now(): Long = clock.get()
    private val random = java.util.Random(7)
    override fun randomBytes(length: Int): ByteArray = synchronized(random) { ByteArray(length).also { random.nextBytes(it) } }
    override fun log(message: String) { logs.add(message) }
}

fun config(allow: List<String> = emptyList(), b: RampartConfiguration.Builder.() -> Unit = {}): RampartConfiguration =
    RampartConfiguration.Builder().publishableKey("pk_test").baseUrl("https://rampart.test").baseURLAllowList(allow).debugLoggingEnabled(true).apply(b).build()

/** JSON as plain Kotlin values, numbers as doubles, so that two documents compare with `==`. */
fun plain(v: Any?): Any? = when (v) {
    is JSONObject -> v.keys().asSequence().associateWith { plain(v.get(it)) }
    is JSONArray -> (0 until v.length()).map { plain(v.get(it)) }
    is Number -> v.toDouble()
    JSONObject.NULL -> null
    else -> v
}

/** The shared test vectors (clients/test-vectors), or the directory the `rampart.vectors` property names. */
fun vectors(name: String): JSONObject {
    val dir = System.getProperty("rampart.vectors")?.let { File(it) } ?: File("../test-vectors")
    val file = File(dir, name)
    check(file.isFile) { "the shared test vectors are missing: ${file.absolutePath}" }
    return JSONObject(file.readText())
}
