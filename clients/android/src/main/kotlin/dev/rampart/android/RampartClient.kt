package dev.rampart.android

import org.json.JSONObject
import java.util.concurrent.Callable
import java.util.concurrent.Executors
import java.util.concurrent.ScheduledExecutorService
import java.util.concurrent.ThreadFactory
import java.util.concurrent.TimeUnit

/**
 * The client core: Castle's mobile API shape (identify, secure, screen, custom, flush, reset, the
 * request token and its interceptor) over a [Platform]. It owns the rules of when events are
 * queued and flushed, the user attached to them, and the app's lifecycle; the queue
 * ([EventQueue]), the sending ([Flusher]), the session and tokens ([SessionKeeper]) and the allow
 * list ([AllowList], [RampartInterceptor]) are its parts. No Android import: the unit tests run it
 * over an in-memory platform, and [Rampart] runs it over [AndroidPlatform].
 *
 * Threads: every change of state runs on one worker thread, in the order it was asked for, so
 * the public methods return at once and never block the caller (the main thread), except
 * [createRequestToken], which may wait for a registration. Network calls run on the worker too,
 * so one flush runs at a time.
 *
 * When events are flushed (Castle's mobile SDKs' rules, docs/mobile.md): at the app's install,
 * update, open and close, at identify, and when the queue reaches `flushLimit`. Never otherwise,
 * except by [flush] and [reset].
 */
class RampartClient(private val platform: Platform, val configuration: RampartConfiguration) {
    private val c = configuration
    private val allowList = AllowList(c.baseURLAllowList)
    private val worker: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor(daemon("rampart-worker"))
    /** Waits for a first session on behalf of requests, apart from the worker (which may be flushing). */
    private val registrar = Executors.newCachedThreadPool(daemon("rampart-token"))
    private val queue = EventQueue(platform.storage, KEYS_QUEUE, c.maxQueueLimit, ::log)
    private lateinit var sessions: SessionKeeper
    private lateinit var flusher: Flusher
    private val unsubscribers = ArrayList<() -> Unit>()

    @Volatile private var agent: String? = null
    @Volatile private var started = false
    @Volatile private var destroyed = false
    private var appState = AppState.ACTIVE
    private var lastScreen: String? = null
    private var user = User(null, null, null, null)
    @Volatile private var nextBackgroundRegistration = 0L

    /** The identified user, the signature from `secure` and whom it was given for, and the JWT from `userJwt`. */
    private data class User(val id: String?, val signature: String?, val signatureFor: String?, val jwt: String?)

    /** Starts the client on its worker: reads what earlier runs stored, queues the install, update and open events, registers a session and flushes. */
    fun start() {
        if (started) return
        started = true
        run("start") { launch() }
    }

    private fun launch() {
        val device = platform.deviceInfo()
        val userAgent = Components.userAgent(device)
        agent = userAgent
        val installId = installId()
        sessions = SessionKeeper(platform, c.baseUrl, c.publishableKey, KEYS_SESSION, ::log) {
            val m = Components.build(device, installId, userAgent, c.deviceIDAutoForwardingEnabled, try { platform.attestation() } catch (e: Exception) { null })
            c.attestationProvider?.let { provider -> attest(provider, device.app.id)?.let { m.put("attestation", it) } }
            m
        }
        flusher = Flusher(platform, queue, sessions, c.baseUrl, c.publishableKey, ::log) { delay ->
            worker.schedule({ guarded("flush after Retry-After") { flusher.flush() } }, delay, TimeUnit.MILLISECONDS)
        }
        queue.load()
        sessions.load()
        loadUser()

        appState = platform.appState.current()
        unsubscribers.add(platform.appState.subscribe { state -> run("app state") { onAppState(state) } })
        if (c.screenTrackingEnabled) {
            val screens = platform.screens
            if (screens != null) unsubscribers.add(screens.subscribeScreens { name -> run("screen") { onScreen(name) } })
            else log("screen tracking is on but the platform has no screen source")
        }
        val lifecycle = lifecycleAtLaunch(device)
        val open = appState == AppState.ACTIVE
        if (open && c.lifecycleTrackingEnabled) enqueue("app_opened")
        // A launch in the foreground is an open: a session older than an hour is replaced.
        if (ensureSession(if (open) SessionKeeper.SESSION_REFRESH_MS else null) && (lifecycle || open)) flusher.flush()
    }

    /**
     * A Play Integrity verdict over a fresh challenge (docs/mobile.md, "Attestation"): the challenge
     * asked for with the app's id, its binding handed to the app's provider, the token it returns
     * sent with the challenge. Null (register without one) when any step fails.
     */
    private fun attest(provider: AttestationProvider, appId: String): JSONObject? {
        return try {
            val res = platform.postJson("${c.baseUrl}${Wire.CHALLENGE_PATH}", JSONObject().put("publishable_key", c.publishableKey).put("app", appId).toString())
            val challenge = if (res.status == 201) JSONObject(res.body).optString("challenge", "") else ""
            if (challenge.isEmpty()) {
                log("no attestation challenge (Rampart answered ${res.status}); registering without an attestation")
                return null
            }
            val binding = Crypto.base64url(java.security.MessageDigest.getInstance("SHA-256").digest(challenge.toByteArray(Charsets.UTF_8)))
            val token = provider.playIntegrityToken(binding)
            if (token.isNullOrEmpty() || token.length > Wire.ATTESTATION_TOKEN_LENGTH) {
                log("the attestation provider gave no usable token; registering without an attestation")
                return null
            }
            JSONObject().put("kind", "play_integrity").put("challenge", challenge).put("token", token)
        } catch (e: Exception) {
            log("the attestation failed (${e.javaClass.simpleName}); registering without one")
            null
        }
    }

    /** Queues `app_installed` or `app_updated` when this launch is the first, or the first of a new version; true when it did. */
    private fun lifecycleAtLaunch(device: DeviceInfo): Boolean {
        val app = device.app
        val previous = try { platform.storage.get(KEYS_APP)?.let { JSONObject(it) } } catch (e: Exception) { null }
        val previousVersion = previous?.optString("version")?.ifEmpty { null }
        val previousBuild = previous?.let { if (it.isNull("build")) null else it.optString("build").ifEmpty { null } }
        val properties = LinkedHashMap<String, Any>()
        properties["version"] = app.version.take(Wire.PROPERTY_STRING_LENGTH)
        app.build?.let { properties["build"] = it.take(Wire.PROPERTY_STRING_LENGTH) }
        var queued = false
        if (previous == null) {
            if (c.lifecycleTrackingEnabled) enqueue("app_installed", properties = properties)
            queued = c.lifecycleTrackingEnabled
        } else if (previousVersion != app.version) {
            previousVersion?.let { properties["previous_version"] = it.take(Wire.PROPERTY_STRING_LENGTH) }
            previousBuild?.let { properties["previous_build"] = it.take(Wire.PROPERTY_STRING_LENGTH) }
            if (c.lifecycleTrackingEnabled) enqueue("app_updated", properties = properties)
            queued = c.lifecycleTrackingEnabled
        }
        // Stored even with lifecycle tracking off, so that turning it on later is not taken for an install.
        if (previous == null || previousVersion != app.version || previousBuild != app.build) {
            try {
                platform.storage.set(KEYS_APP, JSONObject().put("version", app.version).put("build", app.build ?: JSONObject.NULL).toString())
            } catch (e: Exception) {
                log("the app version could not be stored")
            }
        }
        return queued
    }

    private fun onAppState(state: AppState) {
        if (destroyed || state == appState) return
        appState = state
        if (state == AppState.ACTIVE) {
            if (c.lifecycleTrackingEnabled) enqueue("app_opened")
            if (ensureSession(SessionKeeper.SESSION_REFRESH_MS)) flusher.flush()
        } else {
            if (c.lifecycleTrackingEnabled) enqueue("app_closed")
            // The process may be killed at any moment: what is not sent now stays stored for the next open.
            flusher.flush()
        }
    }

    private fun onScreen(name: String) {
        if (name.isEmpty() || name == lastScreen) return
        lastScreen = name
        enqueue("screen", name = name.take(Wire.NAME_LENGTH))
    }

    /** Registers a session if needed; false when that failed (logged), which only postpones it. */
    private fun ensureSession(maxAgeMs: Long? = null): Boolean = try {
        sessions.ensure(maxAgeMs)
        true
    } catch (e: Exception) {
        log("no session for now; it will be registered again at the next trigger or token")
        false
    }

    /** Queues an event with the identified user, and flushes when the queue reaches the flush limit. Worker only. */
    private fun enqueue(type: String, name: String? = null, properties: Map<String, Any>? = null) {
        if (destroyed) return
        val u = user
        queue.push(
            QueuedEvent(
                id = 0, type = type, name = name,
                userId = u.id,
                userSignature = if (u.id != null) u.signature else null,
                userJwt = if (type == "identify" && u.id != null) u.jwt else null,
                properties = properties?.takeIf { it.isNotEmpty() },
                at = platform.now(),
                offset = sessions.offset(),
            ),
        )
        log("queued $type (${queue.size()} queued)")
        if (queue.size() >= c.flushLimit) flusher.flush()
    }

    /** Attaches [userId] to this and every later event, queues an `identify` and flushes. */
    @JvmOverloads
    fun identify(userId: String, traits: Map<String, Any?>? = null) {
        require(userId.isNotEmpty() && userId.length <= Wire.USER_ID_LENGTH) { "Rampart: identify() needs a user id of 1 to ${Wire.USER_ID_LENGTH} characters" }
        val properties = toProperties(traits)
        run("identify") {
            val u = user
            // A signature given for another user must not travel with this one's events; one given
            // before any identify is taken to be for the user identified next.
            val keep = u.signature != null && (u.signatureFor == null || u.signatureFor == userId)
            user = User(userId, if (keep) u.signature else null, if (keep) userId else null, if (u.id == userId) u.jwt else null)
            saveUser()
            enqueue("identify", properties = properties)
            flusher.flush()
        }
    }

    /** The user signature from the app's backend: hex HMAC-SHA256 of the user id under the environment's API secret. */
    fun secure(userSignature: String) {
        require(SIGNATURE.matches(userSignature)) { "Rampart: secure() needs the 64-character hex HMAC-SHA256 of the user id" }
        run("secure") {
            user = user.copy(signature = userSignature.lowercase(), signatureFor = user.id)
            saveUser()
        }
    }

    /**
     * Castle's signed-user form: a JWT the app's backend signed with the API secret (HS256), naming
     * the user as `id` (or `sub`). Identifies that user (their id on this and every later event)
     * and queues an `identify` carrying the JWT, which Rampart verifies; flushes.
     */
    fun userJwt(jwt: String) {
        val userId = userIdOfJwt(jwt) ?: throw IllegalArgumentException("Rampart: userJwt() needs a JWT (at most ${Wire.USER_JWT_LENGTH} characters) whose payload names the user as id or sub")
        run("userJwt") {
            user = User(userId, null, null, jwt)
            saveUser()
            enqueue("identify")
            flusher.flush()
        }
    }

    /** Queues a screen view (names are cut to 128 characters). */
    fun screen(name: String) {
        require(name.isNotEmpty()) { "Rampart: screen() needs a name" }
        run("screen") {
            lastScreen = name
            enqueue("screen", name = name.take(Wire.NAME_LENGTH))
        }
    }

    /**
     * Queues a custom event (Castle's `custom`): a name and up to 20 properties. A server that does
     * not take custom events refuses them alone; the other events of the batch are still sent.
     */
    @JvmOverloads
    fun custom(name: String, properties: Map<String, Any?>? = null) {
        require(name.isNotEmpty()) { "Rampart: custom() needs a name" }
        val p = toProperties(properties)
        run("custom") { enqueue("custom", name = name.take(Wire.NAME_LENGTH), properties = p) }
    }

    /** Sends what is queued now. Failures keep the events. */
    fun flush() {
        run("flush") { flusher.flush() }
    }

    /**
     * Flushes when [url] is under the allow list (Castle's `flushIfNeeded`), so that the queued
     * events reach Rampart before the backend asks for a verdict on that request; true when it
     * did. The interceptor calls it for every allow-listed request.
     */
    fun flushIfNeeded(url: String): Boolean {
        if (!allowList.allows(url)) return false
        flush()
        return true
    }

    /** Flushes, then forgets the identified user and the signature (at logout). */
    fun reset() {
        run("reset") {
            flusher.flush()
            user = User(null, null, null, null)
            try { platform.storage.remove(KEYS_USER) } catch (e: Exception) { log("the user could not be removed from storage") }
        }
    }

    fun queueSize(): Int = queue.size()

    /**
     * A fresh request token, at once, when a session exists; else null (and a session is
     * registered in the background, so that a later call has one).
     */
    fun clientId(): String? {
        if (destroyed || !this::sessions.isInitialized) return null
        val token = sessions.mint()
        val now = platform.now()
        // At most every REGISTRATION_RETRY_MS: an app offline calls this per request.
        if (token == null && now >= nextBackgroundRegistration) {
            nextBackgroundRegistration = now + REGISTRATION_RETRY_MS
            registrar.execute { ensureSession() }
        }
        return token
    }

    /** A fresh request token, registering a session first when needed (blocking: not on the main thread). Throws when none can be had. */
    fun createRequestToken(): String {
        awaitStarted(START_WAIT_MS)
        check(this::sessions.isInitialized) { "Rampart: the client has not started" }
        return sessions.mintFrom(sessions.ensure())
    }

    fun clientIdHeaderName(): String = c.clientIdHeaderName

    /**
     * The headers a request to [url] should carry (Castle's `headers(url)`): the token header when
     * [url] is under the allow list and a session exists, else none. For HTTP clients other than
     * OkHttp; it never waits for a registration.
     */
    fun headers(url: String): Map<String, String> {
        if (!allowList.allows(url)) return emptyMap()
        val token = clientId() ?: return emptyMap()
        return mapOf(c.clientIdHeaderName to token)
    }

    /** `<App>/<version> (<build>; <model>; Android <osVersion>) rampart-android/<version>`, once the device is known. */
    fun userAgent(): String? = agent

    /** An OkHttp interceptor that adds the token header to requests under the allow list. */
    fun interceptor(): RampartInterceptor = RampartInterceptor(allowList::allows, ::clientIdHeaderName, ::tokenForRequest, ::flush)

    /** A token for an outgoing request: at once when a session exists, else after at most [TOKEN_WAIT_MS], else null. */
    internal fun tokenForRequest(): String? {
        clientId()?.let { return it }
        if (destroyed) return null
        val f = registrar.submit(Callable { createRequestToken() })
        return try {
            f.get(TOKEN_WAIT_MS, TimeUnit.MILLISECONDS)
        } catch (e: Exception) {
            log("no token within ${TOKEN_WAIT_MS / 1000} s: the request goes without one")
            null
        }
    }

    /** Blocks until the work asked for so far has run (for tests, and before a clean shutdown). */
    fun idle(timeoutMs: Long = 60_000) {
        // The worker runs tasks in order, and a flush runs inside the task that asked for it: a
        // marker's end means every task asked for before it ended (a Retry-After timer's later flush
        // is not waited for).
        worker.submit {}.get(timeoutMs, TimeUnit.MILLISECONDS)
    }

    private fun awaitStarted(timeoutMs: Long) {
        if (this::sessions.isInitialized) return
        try { worker.submit {}.get(timeoutMs, TimeUnit.MILLISECONDS) } catch (e: Exception) { /* the caller sees no session */ }
    }

    /** Stops listening to the app's state and screens and stops the threads; what is stored stays. */
    fun destroy() {
        destroyed = true
        run("destroy") { unsubscribers.forEach { it() }; unsubscribers.clear() }
        try { platform.close() } catch (e: Exception) { log("the platform could not be closed") }
        worker.shutdown()
        registrar.shutdown()
    }

    /** The install id: random, made once, kept in secure storage. */
    private fun installId(): String {
        try {
            val stored = platform.secureStorage.get(KEYS_INSTALL_ID)
            if (stored != null && INSTALL_ID.matches(stored)) return stored
        } catch (e: Exception) {
            log("the install id could not be read from secure storage")
        }
        val id = Crypto.base64url(platform.randomBytes(16))
        try { platform.secureStorage.set(KEYS_INSTALL_ID, id) } catch (e: Exception) { log("the install id could not be stored; a new one is made at the next launch") }
        return id
    }

    private fun loadUser() {
        try {
            val raw = platform.storage.get(KEYS_USER) ?: return
            val o = JSONObject(raw)
            val id = o.optString("id").ifEmpty { null } ?: return
            if (user.id == null) {
                val signature = o.optString("signature").takeIf { SIGNATURE.matches(it) }
                val jwt = o.optString("jwt").takeIf { it.isNotEmpty() && userIdOfJwt(it) == id }
                user = User(id, signature, if (signature != null) id else null, jwt)
            }
        } catch (e: Exception) {
            log("the identified user could not be read from storage")
        }
    }

    private fun saveUser() {
        try {
            val u = user
            platform.storage.set(KEYS_USER, JSONObject().put("id", u.id ?: JSONObject.NULL).put("signature", u.signature ?: JSONObject.NULL).put("jwt", u.jwt ?: JSONObject.NULL).toString())
        } catch (e: Exception) {
            log("the identified user could not be stored")
        }
    }

    private fun run(what: String, task: () -> Unit) {
        if (worker.isShutdown) return
        try {
            worker.execute { guarded(what) { if (this::sessions.isInitialized || what == "start") task() } }
        } catch (e: java.util.concurrent.RejectedExecutionException) {
            // Destroyed meanwhile.
        }
    }

    private fun guarded(what: String, task: () -> Unit) {
        try {
            task()
        } catch (e: Exception) {
            log("$what failed: ${e.javaClass.simpleName}")
        }
    }

    private fun log(message: String) {
        if (c.debugLoggingEnabled) platform.log("[Rampart] $message")
    }

    companion object {
        /** How long the interceptor waits for a first session before sending a request without a token. */
        const val TOKEN_WAIT_MS = 3000L
        private const val START_WAIT_MS = 10_000L
        private const val REGISTRATION_RETRY_MS = 10_000L
        internal const val KEYS_QUEUE = "rampart.queue"
        internal const val KEYS_APP = "rampart.app"
        internal const val KEYS_USER = "rampart.user"
        internal const val KEYS_INSTALL_ID = "rampart.install_id"
        internal const val KEYS_SESSION = "rampart.session"
        private val INSTALL_ID = Regex("^[A-Za-z0-9_-]{16,64}$")
        private val SIGNATURE = Regex("^[0-9a-fA-F]{64}$")

        private val JWT = Regex("^[A-Za-z0-9_-]+\\.([A-Za-z0-9_-]+)\\.[A-Za-z0-9_-]+$")

        /** The user a JWT's payload names (`id`, else `sub`), read without verifying it: Rampart verifies it. */
        internal fun userIdOfJwt(jwt: String): String? {
            if (jwt.length > Wire.USER_JWT_LENGTH) return null
            val m = JWT.matchEntire(jwt) ?: return null
            return try {
                val payload = JSONObject(String(java.util.Base64.getUrlDecoder().decode(m.groupValues[1]), Charsets.UTF_8))
                val id = if (payload.has("id") && !payload.isNull("id")) payload.get("id") else if (payload.has("sub")) payload.get("sub") else null
                when {
                    id is String && id.isNotEmpty() && id.length <= Wire.USER_ID_LENGTH -> id
                    id is Int || id is Long -> id.toString()
                    else -> null
                }
            } catch (e: Exception) {
                null
            }
        }

        private fun daemon(name: String) = ThreadFactory { r -> Thread(r, name).apply { isDaemon = true } }

        /** Traits as event properties: at most 20, strings cut to 256, numbers and booleans; anything else left out. */
        internal fun toProperties(traits: Map<String, Any?>?): Map<String, Any>? {
            if (traits == null) return null
            val out = LinkedHashMap<String, Any>()
            for ((k, v) in traits) {
                if (out.size >= Wire.PROPERTIES_PER_EVENT) break
                when (v) {
                    is String -> out[k] = v.take(Wire.PROPERTY_STRING_LENGTH)
                    is Boolean -> out[k] = v
                    is Int, is Long, is Short, is Byte -> out[k] = (v as Number).toLong()
                    is Number -> if (v.toDouble().isFinite()) out[k] = v.toDouble()
                    else -> {}
                }
            }
            return out.ifEmpty { null }
        }
    }
}
