package dev.rampart.android

import org.json.JSONArray
import org.json.JSONObject

/**
 * The registration's `mobile` object, built from what the platform reports (docs/mobile.md §1),
 * and the user agent the library describes the app with. Every value is cut to the protocol's
 * bounds, and anything out of range is left out: the collector refuses the whole registration
 * (422) for one oversized member, and a phone with a long model name must not lose its session.
 *
 * Privacy: the raw vendor id (ANDROID_ID) is hashed with the app's id before it is sent; it is
 * sent as it is only with device-ID forwarding on.
 */
internal object Components {
    private fun cut(s: String?, max: Int): String? = if (s.isNullOrEmpty()) null else s.take(max)

    fun build(info: DeviceInfo, installId: String, userAgent: String, forwardDeviceId: Boolean, attestation: Attestation?): JSONObject {
        val m = JSONObject()
        m.put("platform", info.platform)
        m.put("osVersion", cut(info.osVersion, Wire.OS_VERSION_LENGTH) ?: "unknown")
        m.put("model", cut(info.model, Wire.MODEL_LENGTH) ?: "unknown")
        cut(info.manufacturer, Wire.MANUFACTURER_LENGTH)?.let { m.put("manufacturer", it) }
        val app = JSONObject().put("id", info.app.id).put("version", cut(info.app.version, Wire.APP_VERSION_LENGTH) ?: "0")
        cut(info.app.build, Wire.APP_VERSION_LENGTH)?.let { app.put("build", it) }
        m.put("app", app)
        m.put("sdk", Version.SDK.take(Wire.SDK_LENGTH))
        cut(info.locale, Wire.LOCALE_LENGTH)?.let { m.put("locale", it) }
        cut(info.timezone, Wire.TIMEZONE_LENGTH)?.let { m.put("timezone", it) }
        info.timezoneOffset?.takeIf { it in -900..900 }?.let { m.put("timezoneOffset", it) }
        info.screen?.let { s ->
            if (s.width in 0..100_000 && s.height in 0..100_000 && s.scale in 0.0..10.0 && !s.scale.isNaN()) {
                m.put("screen", JSONObject().put("width", s.width).put("height", s.height).put("scale", s.scale))
            }
        }
        m.put("installId", installId)
        if (!info.vendorId.isNullOrEmpty()) {
            m.put("vendorId", Crypto.sha256Hex("${info.app.id}:${info.vendorId}"))
            if (forwardDeviceId) m.put("deviceId", info.vendorId.take(Wire.DEVICE_ID_LENGTH))
        }
        m.put("userAgent", userAgent.take(Wire.USER_AGENT_LENGTH))
        val integrity = info.integrity.distinct().filter { it in Wire.INTEGRITY_CHECKS }.take(Wire.INTEGRITY_CHECKS_MAX)
        if (integrity.isNotEmpty()) m.put("integrity", JSONArray(integrity))
        if (attestation != null && attestation.kind == "play_integrity" && attestation.token.isNotEmpty() && attestation.token.length <= Wire.ATTESTATION_TOKEN_LENGTH) {
            m.put("attestation", JSONObject().put("kind", attestation.kind).put("token", attestation.token))
        }
        return m
    }

    /** Printable ASCII only, without the characters that would split a product token. */
    private fun token(s: String): String = s.replace(Regex("[^\\x21-\\x7e]|[/()\";]"), "")
    private fun comment(s: String): String = s.replace(Regex("[^\\x20-\\x7e]|[()\";]"), "").trim()

    /**
     * `<AppName>/<version> (<build>; <model>; Android <osVersion>) rampart-android/<version>`, the
     * same for every request of the app, safe as an HTTP header value.
     */
    fun userAgent(info: DeviceInfo): String {
        val name = (token(info.app.name).ifEmpty { token(info.app.id) }.ifEmpty { "App" }).take(150)
        val version = token(info.app.version).ifEmpty { "0" }.take(Wire.APP_VERSION_LENGTH)
        val build = comment(info.app.build ?: "").ifEmpty { version }.take(Wire.APP_VERSION_LENGTH)
        val model = comment(info.model).ifEmpty { "unknown" }.take(Wire.MODEL_LENGTH)
        val os = comment(info.osVersion).take(Wire.OS_VERSION_LENGTH)
        return "$name/$version ($build; $model; Android $os) ${Version.SDK}".take(Wire.USER_AGENT_LENGTH)
    }
}
