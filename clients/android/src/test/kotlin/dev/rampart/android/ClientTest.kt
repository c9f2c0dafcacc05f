package dev.rampart.android

import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import org.json.JSONObject
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertNotEquals
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner

/** The client's rules beyond the vectors: the interceptor, identify and secure, the session, the server's refusals. */
@RunWith(RobolectricTestRunner::class)
class ClientTest {
    private val clients = ArrayList<RampartClient>()
    private fun start(p: FakePlatform, conf: RampartConfiguration = config()): RampartClient = RampartClient(p, conf).also { clients.add(it); it.start(); it.idle() }

    @After
    fun tearDown() = clients.forEach { it.destroy() }

    private fun events(p: FakePlatform) = p.batches.flatMap { b -> (0 until b.length()).map { b.getJSONObject(it) } }

    @Test
    fun theInterceptorSendsAFreshTokenToAllowListedUrlsOnly() {
        val api = MockWebServer().apply { start() }
        val other = MockWebServer().apply { start() }
        repeat(3) { api.enqueue(MockResponse().setBody("{}")) }
        other.enqueue(MockResponse().setBody("{}"))
        val p = FakePlatform()
        val client = start(p, config(listOf(api.url("/api").toString())))
        val http = OkHttpClient.Builder().addInterceptor(client.interceptor()).build()
        http.newCall(Request.Builder().url(api.url("/api/login")).build()).execute().close()
        http.newCall(Request.Builder().url(api.url("/api/profile")).build()).execute().close()
        http.newCall(Request.Builder().url(api.url("/apiv2")).build()).execute().close()
        http.newCall(Request.Builder().url(other.url("/api/login")).build()).execute().close()
        val a = api.takeRequest().getHeader("X-Service-Client-Id")
        val b = api.takeRequest().getHeader("X-Service-Client-Id")
        assertTrue(a!!.startsWith("rpm1.session1."))
        assertTrue(b!!.startsWith("rpm1.session1."))
        assertNotEquals("a fresh token per request", a, b)
        assertNull("a path beside the entry gets nothing", api.takeRequest().getHeader("X-Service-Client-Id"))
        assertNull("another host gets nothing", other.takeRequest().getHeader("X-Service-Client-Id"))
        api.shutdown()
        other.shutdown()
    }

    @Test
    fun anAttestationProviderAttestsOverAFreshChallengeAtRegistration() {
        val p = FakePlatform()
        p.answer = { url, _ -> if (url.endsWith("/v1/client/challenge")) HttpResponse(201, JSONObject().put("challenge", "rpc1.challenge-1.mac").put("salt", "s").put("difficulty", 17).put("expires_in", 300).toString()) else null }
        val bindings = ArrayList<String>()
        start(p, config { attestationProvider { binding -> bindings.add(binding); "verdict-token" } })
        val challengeRequest = p.requests.first { it.first.endsWith("/v1/client/challenge") }
        assertEquals("https://rampart.test/v1/client/challenge", challengeRequest.first)
        assertEquals("com.example.shop", challengeRequest.second.getString("app"))
        assertEquals("pk_test", challengeRequest.second.getString("publishable_key"))
        // The binding is base64url SHA-256 of the challenge, as the Play Integrity request's nonce.
        val expected = Crypto.base64url(java.security.MessageDigest.getInstance("SHA-256").digest("rpc1.challenge-1.mac".toByteArray()))
        assertEquals(listOf(expected), bindings)
        val a = p.registrations[0].getJSONObject("mobile").getJSONObject("attestation")
        assertEquals("play_integrity", a.getString("kind"))
        assertEquals("rpc1.challenge-1.mac", a.getString("challenge"))
        assertEquals("verdict-token", a.getString("token"))
    }

    @Test
    fun aFailedChallengeOrProviderRegistersWithoutAnAttestation() {
        val p = FakePlatform()
        p.answer = { url, _ -> if (url.endsWith("/v1/client/challenge")) HttpResponse(403, JSONObject().put("type", "forbidden").put("message", "no").toString()) else null }
        start(p, config { attestationProvider { "never-asked" } })
        assertTrue(!p.registrations[0].getJSONObject("mobile").has("attestation"))
        val q = FakePlatform()
        q.answer = { url, _ -> if (url.endsWith("/v1/client/challenge")) HttpResponse(201, JSONObject().put("challenge", "rpc1.c.m").toString()) else null }
        start(q, config { attestationProvider { throw IllegalStateException("Play services missing") } })
        assertEquals(1, q.registrations.size)
        assertTrue(!q.registrations[0].getJSONObject("mobile").has("attestation"))
    }

    @Test
    fun castlesHeaderNameCanBeChosen() {
        val api = MockWebServer().apply { start() }
        api.enqueue(MockResponse().setBody("{}"))
        val client = start(FakePlatform(), config(listOf(api.url("/").toString())) { clientIdHeaderName(RampartConfiguration.CASTLE_HEADER) })
        OkHttpClient.Builder().addInterceptor(client.interceptor()).build().newCall(Request.Builder().url(api.url("/login")).build()).execute().close()
        val r = api.takeRequest()
        assertTrue(r.getHeader("X-Castle-Request-Token")!!.startsWith("rpm1."))
        assertNull(r.getHeader("X-Service-Client-Id"))
        assertEquals("X-Castle-Request-Token", client.clientIdHeaderName())
        assertTrue(client.headers(api.url("/login").toString())["X-Castle-Request-Token"]!!.startsWith("rpm1."))
        assertEquals(emptyMap<String, String>(), client.headers("https://elsewhere.example/login"))
        api.shutdown()
    }

    @Test
    fun tokensAreInRampartsClockAndTheSessionIsReused() {
        val p = FakePlatform()
        p.serverSkew = 90_000 // the phone is 90 s behind
        val client = start(p)
        val t = client.createRequestToken().split('.').let { it[it.size - 3].toLong() }
        assertEquals(p.now() + 90_000, t)
        val events = events(p)
        assertEquals(p.now() + 90_000, java.time.Instant.parse(events[0].getString("timestamp")).toEpochMilli())
        assertEquals(1, p.registrations.size)
        // A second launch takes up the stored session (less than an hour old).
        val again = start(FakePlatform(storage = p.storage, secureStorage = p.secureStorage).also { it.clock.set(p.now() + 60_000) })
        assertTrue(again.clientId()!!.startsWith("rpm1.session1."))
        val m = p.registrations[0].getJSONObject("mobile")
        assertEquals("Pixel 8", m.getString("model"))
        assertEquals(JSONObject().put("id", "com.example.shop").put("version", "3.2.1").put("build", "321").toString(), m.getJSONObject("app").toString())
        assertEquals("ShopApp/3.2.1 (321; Pixel 8; Android 14) rampart-android/0.1.0", client.userAgent())
    }

    @Test
    fun identifyCarriesTheUserAndASignatureOnlyForThatUser() {
        val p = FakePlatform()
        val client = start(p)
        val sig = "a".repeat(64)
        client.secure(sig)
        client.identify("42", mapOf("plan" to "pro", "seats" to 3, "nested" to mapOf("x" to 1)))
        client.screen("Home")
        client.identify("43")
        client.flush()
        client.idle()
        val e = events(p).drop(2)
        assertEquals(listOf("identify", "screen", "identify"), e.map { it.getString("type") })
        assertEquals("42", e[0].getString("user_id"))
        assertEquals(sig, e[0].getString("user_signature"))
        assertEquals("{\"plan\":\"pro\",\"seats\":3}", e[0].getJSONObject("properties").toString())
        assertEquals(sig, e[1].getString("user_signature"))
        assertEquals("43", e[2].getString("user_id"))
        assertTrue("another user's signature is not sent", !e[2].has("user_signature"))
        client.reset()
        client.screen("Login")
        client.flush()
        client.idle()
        assertTrue(!events(p).last().has("user_id"))
    }

    @Test
    fun userJwtIdentifiesTheUserItNamesAndCarriesTheJwtOnTheIdentify() {
        val p = FakePlatform()
        val client = start(p)
        val b64 = { t: String -> java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(t.toByteArray()) }
        val jwt = "${b64("{\"alg\":\"HS256\"}")}.${b64("{\"id\":\"u-7\",\"email\":\"u7@example.com\"}")}.c2ln"
        client.userJwt(jwt)
        client.screen("Home")
        client.flush()
        client.idle()
        val (identify, screen) = events(p).takeLast(2)
        assertEquals("identify", identify.getString("type"))
        assertEquals("u-7", identify.getString("user_id"))
        assertEquals(jwt, identify.getString("user_jwt"))
        assertEquals("u-7", screen.getString("user_id"))
        assertTrue("only the identify carries the JWT", !screen.has("user_jwt"))
        assertEquals("42", RampartClient.userIdOfJwt("${b64("{}")}.${b64("{\"sub\":42}")}.c2ln"))
        for (bad in listOf("not-a-jwt", "${b64("{}")}.${b64("{\"email\":\"x\"}")}.c2ln", "a.%%%.b")) {
            try {
                client.userJwt(bad)
                throw AssertionError("accepted $bad")
            } catch (e: IllegalArgumentException) {
                assertTrue(e.message!!.contains("JWT"))
            }
        }
    }

    @Test
    fun anAllowListedRequestFlushesTheQueue() {
        val api = MockWebServer().apply { start() }
        repeat(2) { api.enqueue(MockResponse().setBody("{}")) }
        val p = FakePlatform()
        val client = start(p, config(listOf(api.url("/api").toString())))
        client.screen("Login")
        client.idle()
        assertEquals(1, client.queueSize())
        assertTrue(!client.flushIfNeeded("https://elsewhere.example/api"))
        val http = OkHttpClient.Builder().addInterceptor(client.interceptor()).build()
        http.newCall(Request.Builder().url(api.url("/other")).build()).execute().close()
        client.idle()
        assertEquals("a request outside the allow list flushes nothing", 1, client.queueSize())
        http.newCall(Request.Builder().url(api.url("/api/login")).build()).execute().close()
        client.idle()
        assertEquals(0, client.queueSize())
        assertEquals("Login", events(p).last().getString("name"))
        api.shutdown()
    }

    @Test
    fun anEventTheServerRefusesIsDroppedAloneAndTheOthersAreSent() {
        val p = FakePlatform()
        val client = start(p)
        // A server that does not know custom events names them in its 422.
        p.answer = { url, body ->
            val events = body.optJSONArray("events")
            val bad = if (events == null) emptyList() else (0 until events.length()).filter { events.getJSONObject(it).getString("type") == "custom" }
            if (url.endsWith("/events") && bad.isNotEmpty()) {
                HttpResponse(422, JSONObject().put("type", "invalid_parameters").put("fields", org.json.JSONArray(bad.map { JSONObject().put("field", "events.$it.type").put("message", "must be one of …") }) ).toString())
            } else null
        }
        client.screen("Cart")
        client.custom("coupon_applied", mapOf("code" to "X1"))
        client.screen("Pay")
        client.flush()
        client.idle()
        assertEquals(listOf("screen", "screen"), events(p).drop(2).map { it.getString("type") })
        assertEquals(0, client.queueSize())
    }

    @Test
    fun anExpiredSessionIsRegisteredAgainAndTheBatchResent() {
        val p = FakePlatform()
        val client = start(p)
        var refused = 0
        p.answer = { url, body ->
            if (url.endsWith("/events") && body.getString("session") == "rps1.session1.mac") {
                refused++
                HttpResponse(422, """{"type":"invalid_request_token","fields":[{"field":"session","message":"expired"}]}""")
            } else null
        }
        client.screen("Home")
        client.flush()
        client.idle()
        assertEquals(1, refused)
        assertEquals(2, p.registrations.size)
        assertEquals("Home", events(p).last().getString("name"))
        assertEquals(0, client.queueSize())
    }

    @Test
    fun aRateLimitKeepsTheEventsUntilRetryAfter() {
        val p = FakePlatform()
        val client = start(p)
        p.answer = { url, _ -> if (url.endsWith("/events")) HttpResponse(429, "{}", mapOf("Retry-After" to "120")) else null }
        client.screen("Home")
        client.flush()
        client.idle()
        assertEquals(1, client.queueSize())
        p.answer = null
        client.flush() // before Retry-After: nothing is sent
        client.idle()
        assertEquals(1, client.queueSize())
        p.clock.addAndGet(121_000)
        client.flush()
        client.idle()
        assertEquals(0, client.queueSize())
    }

    @Test
    fun offlineTheInterceptorWaitsThenSendsWithoutAToken() {
        val api = MockWebServer().apply { start() }
        api.enqueue(MockResponse().setBody("{}"))
        val p = FakePlatform()
        p.accepting = false
        val client = start(p, config(listOf(api.url("/").toString())))
        assertNull(client.clientId())
        OkHttpClient.Builder().addInterceptor(client.interceptor()).build().newCall(Request.Builder().url(api.url("/login")).build()).execute().close()
        assertNull(api.takeRequest().getHeader("X-Service-Client-Id"))
        api.shutdown()
    }
}
