/**
 * The sender routes, the bounce webhook and the group's configuration (docs/framework.md, "Mail":
 * the routes of the mail group), present with the app's mail group.
 *
 * Configuration: `GET /api/mail/config` (superusers; 401 anonymous, 403 other callers): the
 * group's policies, `{require_verified_sender, check_suppression, webhook_configured,
 * unsubscribe_configured}`.
 *
 * Senders: `POST /api/senders {email}` (201 pending, 200 already verified, 429 within 60 s),
 * `POST /api/senders/:id/verify {token}` (404 for a wrong or absent token), `GET /api/senders`
 * (`{items}`). They need a signed-in caller (401) and act on the active account: a member's
 * (X-Account-Id or the signed account cookie, through the app's tenancy resolver; 403 when the
 * caller is not a member of one) or, for a superuser, the one X-Account-Id names (400 without).
 *
 * The bounce webhook:
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
import type { Req } from '../http/types.js';
import { jsonBody } from './request.js';

export function mailRoutes(ctx: ApiContext): Route[] {
  const group = ctx.mailGroup;
  if (!group) return [];
  const secret = group.webhook_secret;
  const senders = ctx.senders;
  /** The account the caller acts for (see the module comment). */
  const accountOf = async (req: Req): Promise<string> => {
    const p = await ctx.auth.resolve(req);
    if (!p) throw ApiError.unauthorized();
    if (p.superuser) {
      const named = req.headers.account;
      if (!named || named.length > 200) throw ApiError.badRequest('Name the account with the X-Account-Id header.');
      return named;
    }
    const id = p.account?.id ?? '';
    if (!id) throw ApiError.forbidden('You can only manage the senders of an account you belong to.');
    return id;
  };
  const config = JSON.stringify({
    require_verified_sender: group.require_verified_sender === true,
    check_suppression: group.check_suppression === true,
    webhook_configured: typeof secret === 'string',
    unsubscribe_configured: false,
  });
  return [{
    method: 'get', pattern: '/api/mail/config', handler: async (req) => {
      await ctx.auth.requireSuperuser(req);
      return json(200, config);
    },
  }, {
    method: 'post', pattern: '/api/senders', handler: async (req) => {
      const account = await accountOf(req);
      const b = jsonBody(req);
      const { sender, created } = await senders.add(account, typeof b === 'object' && b !== null ? (b as Record<string, unknown>).email : undefined);
      return json(created ? 201 : 200, JSON.stringify({ id: sender.id, email: sender.email, status: sender.status }));
    },
  }, {
    method: 'post', pattern: '/api/senders/:id/verify', handler: async (req) => {
      const account = await accountOf(req);
      const b = jsonBody(req);
      await senders.verify(account, req.params[0], typeof b === 'object' && b !== null ? (b as Record<string, unknown>).token : undefined);
      return json(200, '{"verified":true}');
    },
  }, {
    method: 'get', pattern: '/api/senders', handler: async (req) => json(200, JSON.stringify({ items: await senders.list(await accountOf(req)) })),
  }, {
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
