/**
 * An SMTP server on loopback that keeps what it is sent, for the privacy tests: an access request
 * mails its download link, and the test reads it from here.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Mail {
  to: string[];
  raw: string;
  text: string;
}

/** Decode the (single-part) text body of a message as nodemailer writes it. */
export function textOf(raw: string): string {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const cte = /^content-transfer-encoding:\s*(\S+)/im.exec(headers)?.[1]?.toLowerCase() ?? '7bit';
  if (cte === 'quoted-printable') {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  if (cte === 'base64') return Buffer.from(body, 'base64').toString('utf8');
  return body;
}

export class MailSink {
  readonly mails: Mail[] = [];
  private readonly server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        this.mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw, text: textOf(raw) });
        callback();
      });
    },
  });
  port = 0;
  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.server.address() as AddressInfo).port;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A privacy export's download link in a mail: the job id, the expiry and the signature. */
export const EXPORT_LINK =
  /https?:\/\/\S+\/v1\/privacy\/exports\/([0-9a-f-]{36})\?expires=(\d+)&signature=([0-9a-f]{64})/;
