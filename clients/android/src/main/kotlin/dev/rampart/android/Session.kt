package dev.rampart.android

import org.json.JSONObject

/**
 * The device's session with Rampart and the request tokens minted from it (docs/mobile.md §1-2).
 * A session is registered at `POST /v1/client/token`; it holds the signed session, the HMAC key
 * for the tokens, when it was issued and expires (Rampart's clock), and the offset between
 * Rampart's clock and the device's, so that tokens and events are stamped in Rampart's time even
 * when the phone's clock is wrong. It is kept in secure storage and reused across restarts until
 * it expires or, at an open, is more than an hour old.
 *
 * One registration at a time: a caller that finds one under way waits for it and shares it.
 */
internal class SessionKeeper(
    private val platform: Platform,
    private val endpoint: String,
    private val publishableKey: String,
    private val storageKey: String,
    private val log: (String) -> Unit,
    /** The registration's `mobile` object (built per registration, with a fresh attestation). */
    private val components: () -> JSONObject,
) {
    data class Session(val session: String, val key: String, val registeredAt: Long, val expiresAt: Long, val offset: Long) {
        fun toJson(): String = JSONObject().put("session", session).put("key", key).put("registeredAt", registeredAt).put("expiresAt", expiresAt).put("offset", offset).toString()

        companion object {
            fun fromJson(raw: String): Session? = try {
                val o = JSONObject(raw)
                val s = Session(o.getString("session"), o.getString("key"), o.getLong("registeredAt"), o.getLong("expiresAt"), o.getLong("offset"))
                if (s.session.startsWith(Wire.SESSION_PREFIX) && s.key.isNotEmpty()) s else null
            } catch (e: Exception) {
                null
            }
        }
    }

    @Volatile
    private var current: Session? = null
    private val registering = Any()

    /** Takes up the session an earlier run stored, if any. */
    fun load() {
        try {
            val raw = platform.secureStorage.get(storageKey) ?: return
            val s = Session.fromJson(raw)
            if (s != null && current == null) current = s
        } catch (e: Exception) {
            log("the stored session could not be read; a new one will be registered")
        }
    }

    /** Rampart's clock minus the device's, or null before any session. */
    fun offset(): Long? = current?.offset

    fun serverNow(): Long = platform.now() + (current?.offset ?: 0L)

    /** Whether [s] can mint a token that is still good when the server sees it. */
    private fun usable(s: Session?): Boolean = s != null && s.expiresAt - serverNow() >= TOKEN_TTL_MS

    private fun fresh(s: Session?, maxAgeMs: Long?): Boolean {
        if (s == null || !usable(s)) return false
        if (maxAgeMs == null) return true
        val age = serverNow() - s.registeredAt
        return age <= maxAgeMs && age >= -CLOCK_BACK_MS
    }

    /** The current session, registering one first when there is none, it expired, or it is older than [maxAgeMs]. Throws when none can be had. */
    fun ensure(maxAgeMs: Long? = null): Session {
        current.let { if (fresh(it, maxAgeMs)) return it!! }
        synchronized(registering) {
            // Another caller may have registered while this one waited.
            current.let { if (fresh(it, maxAgeMs)) return it!! }
            return register()
        }
    }

    /** A new session after the server refused [stale], unless another caller already replaced it. */
    fun renew(stale: Session): Session {
        synchronized(registering) {
            val s = current
            if (s != null && s != stale && usable(s)) return s
            return register()
        }
    }

    /** A fresh token from the current session, or null when there is none usable. */
    fun mint(): String? {
        val s = current
        return if (usable(s)) mintFrom(s!!) else null
    }

    /**
     * `rpm1.<claims>.<session mac>.<t>.<nonce>.<mac>`: t in Rampart's clock, a new 22-character
     * nonce each time, and the MAC of everything before the last dot under the session key.
     */
    fun mintFrom(s: Session): String = mint(s.session, s.key, platform.now() + s.offset, Crypto.base64url(platform.randomBytes(16)))

    private fun register(): Session {
        val body = JSONObject().put("publishable_key", publishableKey).put("mobile", components())
        log("registering a session")
        val res = platform.postJson("$endpoint${Wire.TOKEN_PATH}", body.toString())
        val answer = try { JSONObject(res.body) } catch (e: Exception) { null }
        if (res.status != 201 && res.status != 200) {
            val (type, message) = describeError(res.status, answer)
            log("session registration failed: $message")
            throw RampartHttpException(res.status, type, message)
        }
        val session = answer?.optString("session", "") ?: ""
        val key = answer?.optString("session_key", "") ?: ""
        val expiresIn = answer?.optLong("session_expires_in", -1) ?: -1
        val serverTime = answer?.optLong("server_time", -1) ?: -1
        if (!session.startsWith(Wire.SESSION_PREFIX) || key.isEmpty() || expiresIn <= 0 || serverTime <= 0) {
            log("session registration answered without a session")
            throw RampartHttpException(res.status, null, "Rampart: the collector answered without a session")
        }
        val s = Session(session, key, serverTime, serverTime + expiresIn * 1000, serverTime - platform.now())
        current = s
        log("session registered (expires in $expiresIn s, clock offset ${s.offset} ms)")
        try {
            platform.secureStorage.set(storageKey, s.toJson())
        } catch (e: Exception) {
            log("the session could not be stored; it is kept in memory")
        }
        return s
    }

    companion object {
        /** At an open, a session older than this is replaced (docs/mobile.md). */
        const val SESSION_REFRESH_MS = 3_600_000L
        /** A token is accepted for five minutes: a session closer than that to its end mints none. */
        private const val TOKEN_TTL_MS = 300_000L
        /** A session issued further ahead than this of the device's idea of Rampart's clock means the clock moved back. */
        private const val CLOCK_BACK_MS = 60_000L

        /** The token for [session] at Rampart time [serverTimeMs] (floored to whole ms) with [nonce]. */
        fun mint(session: String, key: String, serverTimeMs: Long, nonce: String): String {
            val signed = "${Wire.MOBILE_TOKEN_PREFIX}${session.removePrefix(Wire.SESSION_PREFIX)}.$serverTimeMs.$nonce"
            return "$signed.${Crypto.hmacSha256Base64url(key, signed)}"
        }

        /** The error type and a loggable description of a failed answer (field names, no values). */
        fun describeError(status: Int, body: JSONObject?): Pair<String?, String> {
            val type = body?.optString("type")?.takeIf { it.isNotEmpty() }
            val fields = body?.optJSONArray("fields")?.let { a ->
                (0 until a.length()).mapNotNull { a.optJSONObject(it) }.joinToString("; ") { "${it.optString("field")}: ${it.optString("message")}" }
            } ?: ""
            return type to "Rampart answered $status${if (type != null) " $type" else ""}${if (fields.isNotEmpty()) " ($fields)" else ""}"
        }
    }
}
