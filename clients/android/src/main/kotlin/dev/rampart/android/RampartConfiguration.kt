package dev.rampart.android

/**
 * The client's settings, built with [Builder] as Castle's Android SDK's `CastleConfiguration` is
 * (the same names and defaults), plus Rampart's own base URL and the header's name.
 *
 * ```kotlin
 * val configuration = RampartConfiguration.Builder()
 *     .publishableKey("pk_…")
 *     .baseUrl("https://rampart.example.com")
 *     .baseURLAllowList(listOf("https://api.shop.example/v1"))
 *     .build()
 * Rampart.configure(application, configuration)
 * ```
 */
class RampartConfiguration private constructor(b: Builder) {
    /** The environment's publishable key (`pk_…`): not a secret. */
    val publishableKey: String = b.publishableKey ?: ""

    /** Where Rampart answers, without a trailing slash. */
    val baseUrl: String = (b.baseUrl ?: "").trimEnd('/')

    /** Base URLs of the app's own API: only requests under them get the request-token header. */
    val baseURLAllowList: List<String> = b.baseURLAllowList.toList()

    /** Flush when this many events are queued (Castle's default, 20). */
    val flushLimit: Int = b.flushLimit

    /** At most this many events are kept; the oldest are dropped first (1,000). */
    val maxQueueLimit: Int = b.maxQueueLimit

    /** A `screen` event for each activity shown (on by default, as in Castle's native SDKs). */
    val screenTrackingEnabled: Boolean = b.screenTrackingEnabled

    /** `app_installed`, `app_updated`, `app_opened` and `app_closed` events (on by default). */
    val lifecycleTrackingEnabled: Boolean = b.lifecycleTrackingEnabled

    /** Logs to Logcat (never the session key, the session or a whole token); off by default. */
    val debugLoggingEnabled: Boolean = b.debugLoggingEnabled

    /** Also sends the raw ANDROID_ID as `deviceId`, shown to analysts; off by default. */
    val deviceIDAutoForwardingEnabled: Boolean = b.deviceIDAutoForwardingEnabled

    /** The header the token goes in (`X-Service-Client-Id`; [CASTLE_HEADER] is Castle's). */
    val clientIdHeaderName: String = b.clientIdHeaderName

    /** Makes a Play Integrity verdict over Rampart's challenge at each registration, if the app gives one ([AttestationProvider]). */
    val attestationProvider: AttestationProvider? = b.attestationProvider

    init {
        require(publishableKey.startsWith("pk_")) { "Rampart: the configuration needs the publishable key (pk_…)" }
        require(AllowList.parse(baseUrl) != null) { "Rampart: baseUrl must be an absolute http(s) URL" }
        require(flushLimit >= 1) { "Rampart: flushLimit must be a positive integer" }
        require(maxQueueLimit >= 1) { "Rampart: maxQueueLimit must be a positive integer" }
        require(HEADER_NAME.matches(clientIdHeaderName)) { "Rampart: clientIdHeaderName must be an HTTP header name" }
        AllowList(baseURLAllowList)
    }

    class Builder() {
        internal var publishableKey: String? = null
        internal var baseUrl: String? = null
        internal var baseURLAllowList: List<String> = emptyList()
        internal var flushLimit = DEFAULT_FLUSH_LIMIT
        internal var maxQueueLimit = DEFAULT_MAX_QUEUE_LIMIT
        internal var screenTrackingEnabled = true
        internal var lifecycleTrackingEnabled = true
        internal var debugLoggingEnabled = false
        internal var deviceIDAutoForwardingEnabled = false
        internal var clientIdHeaderName = DEFAULT_HEADER
        internal var attestationProvider: AttestationProvider? = null

        /** A builder that starts from [configuration]'s settings. */
        constructor(configuration: RampartConfiguration) : this() {
            publishableKey = configuration.publishableKey
            baseUrl = configuration.baseUrl
            baseURLAllowList = configuration.baseURLAllowList
            flushLimit = configuration.flushLimit
            maxQueueLimit = configuration.maxQueueLimit
            screenTrackingEnabled = configuration.screenTrackingEnabled
            lifecycleTrackingEnabled = configuration.lifecycleTrackingEnabled
            debugLoggingEnabled = configuration.debugLoggingEnabled
            deviceIDAutoForwardingEnabled = configuration.deviceIDAutoForwardingEnabled
            clientIdHeaderName = configuration.clientIdHeaderName
            attestationProvider = configuration.attestationProvider
        }

        fun publishableKey(value: String) = apply { publishableKey = value }
        fun baseUrl(value: String) = apply { baseUrl = value }
        fun baseURLAllowList(value: List<String>) = apply { baseURLAllowList = value.toList() }
        fun flushLimit(value: Int) = apply { flushLimit = value }
        fun maxQueueLimit(value: Int) = apply { maxQueueLimit = value }
        fun screenTrackingEnabled(value: Boolean) = apply { screenTrackingEnabled = value }
        fun lifecycleTrackingEnabled(value: Boolean) = apply { lifecycleTrackingEnabled = value }
        fun debugLoggingEnabled(value: Boolean) = apply { debugLoggingEnabled = value }
        fun deviceIDAutoForwardingEnabled(value: Boolean) = apply { deviceIDAutoForwardingEnabled = value }
        fun clientIdHeaderName(value: String) = apply { clientIdHeaderName = value }
        fun attestationProvider(value: AttestationProvider?) = apply { attestationProvider = value }

        /** Castle's older spelling of [baseURLAllowList]. */
        fun baseURLWhiteList(value: List<String>) = baseURLAllowList(value)

        /** Castle's spelling of [clientIdHeaderName]. */
        fun requestTokenHeaderName(value: String) = clientIdHeaderName(value)

        /** Throws [IllegalArgumentException] naming the first setting that is wrong. */
        fun build(): RampartConfiguration = RampartConfiguration(this)
    }

    companion object {
        const val DEFAULT_FLUSH_LIMIT = 20
        const val DEFAULT_MAX_QUEUE_LIMIT = 1000
        const val DEFAULT_HEADER = "X-Service-Client-Id"
        /** Castle's header name, which Rampart also reads when the backend forwards the app's headers. */
        const val CASTLE_HEADER = "X-Castle-Request-Token"
        private val HEADER_NAME = Regex("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
    }
}
