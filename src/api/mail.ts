/**
 * The bounce webhook (2-uploads-and-mail.md, "Sender and mail HTTP routes"):
 * `POST /api/mail/webhooks/:provider` (`ses` or `postmark`), present with the app's mail group;
 * 404 without a `webhook_secret` or for another provider, 401 for a bad signature or a stale
 * timestamp; each hard bounce or complaint the event names upserts a suppression for the
 * X-Account-Id account ('' = every account). Answers `{suppressed: n}`.
 */
import type { Route } from '../http/types.js';
import { json } from '../http/types.js';
import { ApiError } from '../errors/api-error.js';
import type { ApiContext } from './context.js';
import { suppressionsOf, webhookValid, WEBHOOK_PROVIDERS, type WebhookProvider } from '../mail/bounces.js';
import { bindValue } from '../store/bind.js';
import { nowDate } from '../collections/fields/index.js';
import { addressOf } from '../mail/mail-service.js';

export function mailRoutes(ctx: ApiContext): Route[] {
  const group = ctx.mailGroup;
  if (!group) return [];
  const secret = group.webhook_secret;
  return [{
    method: 'post', pattern: '/api/mail/webhooks/:provider',
    extraHeaders: ['x-webhook-timestamp', 'x-webhook-signature', 'x-account-id'],
    handler: async (req) => {
      const provider = req.params[0] as WebhookProvider;
      if (!secret || !WEBHOOK_PROVIDERS.includes(provider)) throw ApiError.notFound();
      const h = req.headers.extra ?? {};
      const account = h['x-account-id'] ?? '';
      const body = req.body ?? Buffer.alloc(0);
      if (!webhookValid(secret, { timestamp: h['x-webhook-timestamp'] ?? '', signature: h['x-webhook-signature'] ?? '', account }, provider, body)) {
        throw new ApiError(401, 'unauthorized', 'The webhook signature is missing, wrong or stale.');
      }
      if (account.length > 200) throw ApiError.badRequest('X-Account-Id is too long.');
      let event: unknown;
      try {
        event = JSON.parse(body.toString('utf8'));
      } catch {
        throw ApiError.badRequest('The webhook body is not JSON.');
      }
      const now = nowDate();
      const found = suppressionsOf(provider, event).filter((s) => s.email.length <= 320);
      const steps = found.map((s) => {
        const step = ctx.store.sql.mail.suppressStep(addressOf(s.email), account, s.reason, now);
        step.params = step.params.map(bindValue);
        return step;
      });
      if (steps.length) await ctx.store.writer.write(steps);
      for (const s of found) ctx.logger.info(`suppressed ${addressOf(s.email)}${account ? ` for account ${account}` : ''} (${s.reason}, ${provider})`, 'mail');
      return json(200, JSON.stringify({ suppressed: steps.length }));
    },
  }];
}
