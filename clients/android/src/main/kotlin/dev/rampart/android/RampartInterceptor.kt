package dev.rampart.android

import okhttp3.Interceptor
import okhttp3.Response

/**
 * An OkHttp interceptor that puts a fresh request token in a header on every request to the
 * app's own API (the base-URL allow list), and on no other: a token is minted per request,
 * since Rampart accepts each for one login flow only. Until the first session exists a request
 * waits for one up to 3 seconds, then goes without the header. An allow-listed request also
 * flushes the queue, so that the app's events reach Rampart before its backend asks for a verdict.
 *
 * ```kotlin
 * val http = OkHttpClient.Builder().addInterceptor(Rampart.interceptor()).build()
 * ```
 */
class RampartInterceptor internal constructor(
    private val allows: (String) -> Boolean,
    private val headerName: () -> String,
    private val token: () -> String?,
    /** An allow-listed request is a flush trigger (Castle's `flushIfNeeded`). */
    private val flush: () -> Unit = {},
) : Interceptor {
    override fun intercept(chain: Interceptor.Chain): Response {
        val request = chain.request()
        if (!allows(request.url.toString())) return chain.proceed(request)
        flush()
        val value = token() ?: return chain.proceed(request)
        return chain.proceed(request.newBuilder().header(headerName(), value).build())
    }
}
