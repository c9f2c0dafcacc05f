/**
 * Outgoing mail over SMTP with nodemailer: the Mailer the privacy use case sends export links
 * through. `smtp://` upgrades with STARTTLS when the server offers it; `smtps://` is TLS from the
 * start; credentials go in the URL (`smtp://user:pass@host:587`). Query options:
 * `requireTLS=true` (refuse to send unencrypted), `ignoreTLS=true` (never STARTTLS),
 * `tls.rejectUnauthorized=false` (accept a self-signed certificate).
 */
import nodemailer from 'nodemailer';
import type { MailMessage, Mailer } from '../core/privacy/ports';

export interface SmtpMailerOptions {
  /** RAMPART_SMTP_URL, e.g. `smtp://mail.example.com:587` or `smtps://user:pass@host:465`. */
  url: string;
  /** RAMPART_MAIL_FROM. */
  from: string;
  /** Connection, greeting and socket timeout. Default 30 s. */
  timeoutMs?: number;
}

export interface SmtpMailer extends Mailer {
  /** Close pooled connections. */
  close(): void;
}

const flag = (url: URL, name: string): boolean => url.searchParams.get(name) === 'true';

/** A Mailer on an SMTP server. Each send rejects if the server refuses any recipient. */
export function createSmtpMailer(opts: SmtpMailerOptions): SmtpMailer {
  const url = new URL(opts.url);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw new Error('SMTP URL must start with smtp:// or smtps://');
  const timeout = opts.timeoutMs ?? 30_000;
  const transport = nodemailer.createTransport({
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : url.protocol === 'smtps:' ? 465 : 587,
    secure: url.protocol === 'smtps:',
    auth: url.username
      ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }
      : undefined,
    requireTLS: flag(url, 'requireTLS'),
    ignoreTLS: flag(url, 'ignoreTLS'),
    tls:
      url.searchParams.get('tls.rejectUnauthorized') === 'false' ? { rejectUnauthorized: false } : undefined,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  });
  return {
    async send(message: MailMessage): Promise<void> {
      const info = await transport.sendMail({
        from: opts.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
      });
      const rejected: unknown[] = Array.isArray(info.rejected) ? info.rejected : [];
      const names = rejected.map((r) =>
        typeof r === 'string'
          ? r
          : typeof r === 'object' && r !== null && 'address' in r
            ? String((r as { address: unknown }).address)
            : String(r),
      );
      if (names.length > 0) throw new Error(`the SMTP server rejected ${names.join(', ')}`);
    },
    close(): void {
      transport.close();
    },
  };
}

/** The Mailer when no SMTP server is configured: every send fails, saying what to set. */
export const noMailer: Mailer = {
  send: () => Promise.reject(new Error('SMTP is not configured (set RAMPART_SMTP_URL)')),
};
