package dev.rampart.android

import android.app.Application

/**
 * Rampart's client for Android apps, in the shape of Castle's Android SDK: configure once in
 * `Application.onCreate`, then call the static methods from anywhere.
 *
 * ```kotlin
 * class ShopApp : Application() {
 *     override fun onCreate() {
 *         super.onCreate()
 *         Rampart.configure(this, RampartConfiguration.Builder()
 *             .publishableKey("pk_…")
 *             .baseUrl("https://rampart.example.com")
 *             .baseURLAllowList(listOf("https://api.shop.example/v1"))
 *             .build())
 *     }
 * }
 * ```
 */
object Rampart {
    @Volatile
    private var client: RampartClient? = null

    /** Starts the client (a second call keeps the first configuration). Throws on a wrong configuration. */
    @JvmStatic
    fun configure(application: Application, configuration: RampartConfiguration) {
        synchronized(this) {
            if (client != null) return
            client = RampartClient(AndroidPlatform(application), configuration).also { it.start() }
        }
    }

    /** [configure] with the defaults. */
    @JvmStatic
    fun configure(application: Application, publishableKey: String, baseUrl: String) =
        configure(application, RampartConfiguration.Builder().publishableKey(publishableKey).baseUrl(baseUrl).build())

    private fun c(what: String): RampartClient = client ?: throw IllegalStateException("Rampart: call Rampart.configure() before $what")

    /** Attaches the user to this and every later event, queues an `identify` and flushes. */
    @JvmStatic @JvmOverloads
    fun identify(userId: String, traits: Map<String, Any?>? = null) = c("identify()").identify(userId, traits)

    /** The user signature from the app's backend (hex HMAC-SHA256 of the user id under the API secret). */
    @JvmStatic
    fun secure(userSignature: String) = c("secure()").secure(userSignature)

    /** Castle's 2.x name for [secure]. */
    @JvmStatic
    fun userSignature(signature: String) = secure(signature)

    /** Castle's signed-user form: identifies the user a JWT from the app's backend names (Rampart verifies the JWT). */
    @JvmStatic
    fun userJwt(jwt: String) = c("userJwt()").userJwt(jwt)

    @JvmStatic
    fun screen(name: String) = c("screen()").screen(name)

    @JvmStatic @JvmOverloads
    fun custom(name: String, properties: Map<String, Any?>? = null) = c("custom()").custom(name, properties)

    @JvmStatic
    fun flush() = c("flush()").flush()

    /** Flushes when [url] is under the allow list (Castle's `flushIfNeeded`); true when it did. */
    @JvmStatic
    fun flushIfNeeded(url: String): Boolean = c("flushIfNeeded()").flushIfNeeded(url)

    @JvmStatic
    fun reset() = c("reset()").reset()

    @JvmStatic
    fun queueSize(): Int = client?.queueSize() ?: 0

    /** A fresh token, registering a session first when needed: blocking, so not on the main thread. */
    @JvmStatic
    fun createRequestToken(): String = c("createRequestToken()").createRequestToken()

    /** A fresh token at once, or null before the first session. */
    @JvmStatic
    fun clientId(): String? = client?.clientId()

    @JvmStatic
    fun clientIdHeaderName(): String = client?.clientIdHeaderName() ?: RampartConfiguration.DEFAULT_HEADER

    @JvmStatic
    fun userAgent(): String? = client?.userAgent()

    /** The headers a request to [url] should carry: the token header when it is allow-listed and a session exists. */
    @JvmStatic
    fun headers(url: String): Map<String, String> = client?.headers(url) ?: emptyMap()

    /** The OkHttp interceptor that adds the token header to requests under the allow list. */
    @JvmStatic
    fun interceptor(): RampartInterceptor = c("interceptor()").interceptor()

    /** Castle's name for [interceptor]. */
    @JvmStatic
    fun castleInterceptor(): RampartInterceptor = interceptor()

    /** Castle's name for [clientIdHeaderName]. */
    @JvmStatic
    fun requestTokenHeaderName(): String = clientIdHeaderName()

    /** The configured client, for apps that hold it rather than use the static methods. */
    @JvmStatic
    fun client(): RampartClient? = client

    /** Stops the client and forgets it (tests; an app never needs it). What is stored stays. */
    @JvmStatic
    fun shutdown() {
        synchronized(this) {
            client?.destroy()
            client = null
        }
    }
}
