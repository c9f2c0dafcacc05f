package dev.rampart.android

/**
 * The base-URL allow list: which requests get a request token. A token is the app's proof of
 * device to its own API, so it must never reach another host. A URL is allowed when its scheme,
 * host and port equal an entry's and its path is the entry's path or below it at a `/` boundary
 * (the rule of the React Native library and of the shared test vectors).
 *
 * The URL is parsed here, conservatively: whatever two parsers might read differently (user
 * info, a backslash, spaces or control characters, percent-encoding or non-ASCII in the host,
 * dot segments) is refused, so an odd URL goes without a token rather than to the wrong host.
 */
class AllowList(urls: List<String>) {
    internal data class HttpUrl(val scheme: String, val host: String, val port: Int, val path: String)

    private val entries: List<HttpUrl> = urls.map { u ->
        parse(u) ?: throw IllegalArgumentException("Rampart: baseURLAllowList entry is not an absolute http(s) URL: $u")
    }

    val size: Int get() = entries.size

    fun allows(url: String): Boolean {
        val u = parse(url) ?: return false
        return entries.any { e ->
            if (e.scheme != u.scheme || e.host != u.host || e.port != u.port) return@any false
            val base = if (e.path.endsWith("/")) e.path else "${e.path}/"
            // `/v1` allows `/v1` and `/v1/…`, never `/v10`.
            u.path == e.path || u.path.startsWith(base)
        }
    }

    companion object {
        private val URL = Regex("^([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)([^?#]*)")
        private val AUTHORITY = Regex("^(\\[[^\\]]*\\]|[^:]*)(?::(\\d{1,5}))?$")
        private val HOST = Regex("^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$|^\\[[0-9a-f:.]+\\]$")
        private val DOT_SEGMENT = Regex("^(?:\\.|%2e){1,2}$", RegexOption.IGNORE_CASE)

        /** An absolute http(s) URL, or null when it is anything else or could be read two ways. */
        internal fun parse(url: String): HttpUrl? {
            for (c in url) if (c.code <= 0x20 || c.code == 0x7f || c == '\\') return null
            val m = URL.find(url) ?: return null
            val scheme = m.groupValues[1].lowercase()
            if (scheme != "http" && scheme != "https") return null
            val authority = m.groupValues[2]
            // User info (`https://api.example.com@evil.com`) is refused outright: no app needs it.
            if (authority.contains('@')) return null
            val hp = AUTHORITY.find(authority) ?: return null
            val host = hp.groupValues[1].lowercase()
            if (!HOST.matches(host)) return null
            val port = if (hp.groupValues[2].isEmpty()) (if (scheme == "https") 443 else 80) else hp.groupValues[2].toInt()
            if (port < 1 || port > 65535) return null
            val path = m.groupValues[3].ifEmpty { "/" }
            // Dot segments, plain or percent-encoded, could climb out of an allowed prefix.
            if (path.split('/').any { DOT_SEGMENT.matches(it) }) return null
            return HttpUrl(scheme, host, port, path)
        }
    }
}
