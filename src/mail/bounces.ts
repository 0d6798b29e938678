/**
 * Bounce and complaint webhooks (docs/framework.md, "Mail":
 * `POST /api/mail/webhooks/:provider` and suppression): signature check and the recipients a
 * provider event names as hard-bounced or complaining.
 *
 * Signature: HMAC-SHA256 with the shared secret over `<X-Webhook-Timestamp>.<provider>.<X-Account-Id>.<body>`,
 * lowercase hex in X-Webhook-Signature, compared in constant time; the timestamp (Unix seconds)
 * must be within 5 minutes of now.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The two HTTP-API provider identifiers. */
export const WEBHOOK_PROVIDERS = ['ses', 'postmark'] as const;
export type WebhookProvider = (typeof WEBHOOK_PROVIDERS)[number];
/** Seconds a webhook timestamp may differ from now. */
export const FRESHNESS_S = 300;

/** The lowercase hex signature of a webhook. */
export function webhookSignature(secret: string, timestamp: string, provider: string, account: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.${provider}.${account}.`).update(body).digest('hex');
}

/** Whether a webhook's signature is right and its timestamp fresh (`nowS`: Unix seconds). */
export function webhookValid(secret: string, h: { timestamp: string; signature: string; account: string }, provider: string, body: Buffer, nowS = Date.now() / 1000): boolean {
  if (!/^\d{1,12}$/.test(h.timestamp) || Math.abs(nowS - Number(h.timestamp)) > FRESHNESS_S) return false;
  if (!/^[0-9a-f]{64}$/.test(h.signature)) return false;
  const want = Buffer.from(webhookSignature(secret, h.timestamp, provider, h.account, body), 'hex');
  return timingSafeEqual(want, Buffer.from(h.signature, 'hex'));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const emails = (list: unknown, key: string): string[] => (Array.isArray(list) ? list.filter(isObject).map((r) => r[key]).filter((e): e is string => typeof e === 'string') : []);

/**
 * The suppressions an event body asks for: hard bounces and complaints only (soft bounces and
 * deliveries ask for none). SES: SNS notifications or event publishing (`notificationType` /
 * `eventType` Bounce with `bounceType` Permanent, or Complaint); Postmark: `RecordType` Bounce
 * with `Type` HardBounce, or SpamComplaint. A body may hold one event or an array of them.
 */
export function suppressionsOf(provider: WebhookProvider, body: unknown): Array<{ email: string; reason: 'bounce' | 'complaint' }> {
  const events = Array.isArray(body) ? body : [body];
  const out: Array<{ email: string; reason: 'bounce' | 'complaint' }> = [];
  for (const e of events) {
    if (!isObject(e)) continue;
    if (provider === 'ses') {
      const type = e.notificationType ?? e.eventType;
      if (type === 'Bounce' && isObject(e.bounce) && e.bounce.bounceType === 'Permanent') {
        for (const email of emails(e.bounce.bouncedRecipients, 'emailAddress')) out.push({ email, reason: 'bounce' });
      } else if (type === 'Complaint' && isObject(e.complaint)) {
        for (const email of emails(e.complaint.complainedRecipients, 'emailAddress')) out.push({ email, reason: 'complaint' });
      }
    } else if (typeof e.Email === 'string') {
      if (e.RecordType === 'Bounce' && e.Type === 'HardBounce') out.push({ email: e.Email, reason: 'bounce' });
      else if (e.RecordType === 'SpamComplaint') out.push({ email: e.Email, reason: 'complaint' });
    }
  }
  return out;
}
