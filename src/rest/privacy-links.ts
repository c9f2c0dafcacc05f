/**
 * Where a privacy export downloads: the REST door's `GET /v1/privacy/exports/{jobId}` at the
 * public URL (RAMPART_PUBLIC_URL). The core signs the link (PrivacyService); this says where it
 * points, beside the route that serves it.
 */
import type { ExportLinks } from '../core/privacy/service';

export const EXPORT_ROUTE = '/v1/privacy/exports/:jobId';

export function restExportLinks(publicUrl: string): ExportLinks {
  if (!/^https?:\/\//.test(publicUrl)) throw new Error('publicUrl must be an absolute http(s) URL');
  const base = publicUrl.replace(/\/+$/, '');
  return {
    downloadUrl: (jobId, q) =>
      `${base}/v1/privacy/exports/${encodeURIComponent(jobId)}?expires=${q.expires}&signature=${q.signature}`,
  };
}
