/**
 * Realtime fan-out (docs/realtime.md, "Protocol"): every committed change from the change feed
 * (src/store/change-feed.ts) to the clients allowed to see it, in commit order. Subscriptions are
 * grouped by what decides visibility (rule, bound rule parameters, filter, bound filter
 * parameters: an Audience), a record's JSON is rendered once per visibility class (hidden fields
 * never serialized, a private email shown only to its owner and superusers), and a delete
 * carries only the id.
 */
import type { Collection, RuleName } from '../model/schema.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { RuleBook } from '../rules/access.js';
import type { RecordCodec } from '../records/record-codec.js';
import type { Change, ChangeBatch } from '../store/change-feed.js';
import type { SqlValue } from '../store/bind.js';
import { bindParams, type BoundFilter } from '../rules/compiler.js';
import { hidePrivate } from '../records/record-scope.js';
import { errorFrame } from './protocol.js';
import type { Logger } from '../log/logger.js';
import type { Clients, HubStats } from './clients.js';
import type { NativeGroup, Subscription, Topics } from './topics.js';
import { paramsKey, type Audience, type Visibility } from './visibility.js';

/**
 * Frames an event for a transport: WebSocket `{"type":"event",...}` frames, or PocketBase's SSE
 * event (`event:` the topic, `data:` `{action, record}`, `id:` the client id).
 */
function frame(sub: Subscription, action: string, recordJson: string): string {
  if (sub.client.transport.kind === 'ws') return `{"type":"event","topic":${JSON.stringify(sub.topic)},"action":"${action}","record":${recordJson}}`;
  return `id:${sub.client.id}\nevent:${sub.topic}\ndata:{"action":"${action}","record":${recordJson}}\n\n`;
}

/**
 * What Fanout needs instead of the whole Store (src/context/store.ts; ARCHITECTURE.md, "Folders"):
 * a changed record's collection by id and the schema's generation, the read-rule checks and the
 * owner column of a rule, and the record codec that renders a stored row. Built by the composition
 * root (realtimeRepository, src/boot/repositories.ts).
 */
export interface FanoutRepository {
  registry: Pick<CollectionRegistry, 'byId' | 'schemaGeneration'>;
  rules: Pick<RuleBook, 'check' | 'ownerColumn'>;
  /** the record codec of `c`'s current version (Store.codec) */
  codec(c: Collection): RecordCodec;
}

/** Delivers committed batches to the subscribers that may see them. */
export class Fanout {
  private queue: Array<{ batch: ChangeBatch; at: number }> = [];
  private scheduled = false;

  constructor(private repo: FanoutRepository, private logger: Logger, private clients: Clients, private topics: Topics, private visibility: Visibility, private stats: HubStats) {}

  /** Ring of recent batch delivery times (ms), for metrics. */
  private timings = new Float64Array(1000);
  private timed = 0;

  /** Percentiles of the recent batch delivery times (RealtimeMetrics.deliveryMs), null before the first. */
  deliveryTimes(): { p50: number; p99: number; max: number; batches: number } | null {
    const n = Math.min(this.timed, this.timings.length);
    if (n === 0) return null;
    const sorted = Array.from(this.timings.subarray(0, n)).sort((a, b) => a - b);
    const at = (p: number) => Math.round(sorted[Math.min(n - 1, Math.floor(p * n))] * 100) / 100;
    return { p50: at(0.5), p99: at(0.99), max: at(1), batches: n };
  }

  /** Takes a committed batch from the change feed: revocation now, delivery after this turn (flush). */
  onBatch(batch: ChangeBatch): void {
    if (this.topics.byCollection.size === 0 && this.clients.byPrincipal.size === 0) return;
    // Revocation first, synchronously, before any later commit can be delivered.
    this.clients.revoke(batch);
    if (this.topics.byCollection.size === 0) return;
    this.queue.push({ batch, at: performance.now() });
    if (!this.scheduled && !this.flushing) {
      this.scheduled = true;
      // after the writes of this commit are answered: delivery never delays a write's reply
      setImmediate(() => void this.flush());
    }
  }

  /** A flush is delivering (it may wait for verdicts off the main thread); it takes later batches too. */
  private flushing = false;

  /**
   * Delivers the queued batches in commit order. A batch whose verdicts are costly (or whose
   * tenancy callers are due a re-check) is waited for before the next one, so every client still
   * gets its frames in commit order; the usual batch is delivered synchronously.
   */
  private async flush(): Promise<void> {
    this.scheduled = false;
    this.flushing = true;
    try {
      while (this.queue.length) {
        const batches = this.queue;
        this.queue = [];
        for (const { batch, at } of batches) {
          try {
            const pending = this.deliver(batch);
            if (pending) await pending;
          } catch (err) {
            this.logger.error(`realtime delivery failed: ${(err as Error)?.stack ?? String(err)}`);
          }
          this.timings[this.timed++ % this.timings.length] = performance.now() - at;
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Delivers one committed batch; a promise when part of it waits (re-checks, verdicts off the main thread). */
  private deliver(batch: ChangeBatch): void | Promise<void> {
    const perCollection = new Map<string, Change[]>();
    for (const ch of batch.changes) {
      if (!this.topics.byCollection.has(ch.collection)) continue;
      let list = perCollection.get(ch.collection);
      if (!list) perCollection.set(ch.collection, (list = []));
      list.push(ch);
    }
    const entries = [...perCollection];
    // tenancy: callers whose account context is due a re-check are resolved again first
    const stale = this.clients.staleAccounts(perCollection.keys());
    // a caller whose token is being re-checked (its record changed in this batch or just before,
    // and the check reads it) is waited for, so the batch reaches it as the check decides
    const checks: Array<Promise<void>> = [];
    for (const cid of perCollection.keys()) for (const sub of this.topics.byCollection.get(cid) ?? []) if (sub.client.checked) checks.push(sub.client.checked);
    if (stale.size) checks.push(this.clients.refresh(stale));
    if (checks.length) return Promise.all(checks).then(() => this.deliverFrom(entries, 0));
    return this.deliverFrom(entries, 0);
  }

  /** Delivers `entries` (collection id, its changes) from index `i` on, in order. */
  private deliverFrom(entries: Array<[string, Change[]]>, i: number): void | Promise<void> {
    for (; i < entries.length; i++) {
      const [cid, changes] = entries[i];
      const c = this.repo.registry.byId(cid);
      const subs = this.topics.byCollection.get(cid);
      if (!c || !subs) continue;
      const pending = this.deliverCollection(c, changes, subs);
      if (pending) {
        const next = i + 1;
        return pending.then(() => this.deliverFrom(entries, next));
      }
    }
  }

  /**
   * Groups one collection's interested subscriptions by what decides their verdict (Audience) and
   * sends them its changes; a promise when the verdicts are decided off the main thread first.
   */
  private deliverCollection(c: Collection, changes: Change[], subs: Set<Subscription>): void | Promise<void> {
    const changed = new Set<string>();
    for (const ch of changes) changed.add(ch.id);
    // Group the interested subscriptions by what decides their verdict.
    const audiences = new Map<string, Audience>();
    const generation = this.repo.registry.schemaGeneration();
    for (const sub of subs) {
      const client = sub.client;
      // a native member stays one until the schema (rules) or its caller changes: O(1) per socket
      if (sub.native && sub.nativeGen === generation && sub.nativeAuth === client.authVersion && !client.closed) continue;
      if (client.checking || client.closed) {
        if (sub.native) this.topics.leaveNative(sub);
        continue;
      }
      const rule: RuleName = sub.recordId ? 'viewRule' : 'listRule';
      const check = this.repo.rules.check(c, rule, client.principal, null, 'GET', null, 'realtime');
      if (this.topics.decideNative(sub, c, check, generation)) continue;
      if (sub.native) this.topics.leaveNative(sub);
      if (sub.recordId !== null && !changed.has(sub.recordId)) continue;
      if (check.kind === 'deny') continue;
      let filterSql: string | null = null;
      let filterParams: SqlValue[] = [];
      if (sub.filterSrc) {
        let compiled: BoundFilter;
        try {
          compiled = this.topics.compileFilter(sub, c);
        } catch (err) {
          // the schema changed under the filter: the subscription ends, with a reason
          this.topics.unsubscribeTopic(client, sub.topic);
          if (client.transport.kind === 'ws') client.transport.send(errorFrame(`Subscription ${sub.topic} ended: ${(err as Error).message}`));
          continue;
        }
        filterSql = compiled.expr.sql;
        filterParams = bindParams(compiled.expr, { auth: client.principal?.record ?? null, data: null, method: 'GET', context: 'realtime' }, compiled.literals);
      }
      // The rule's SQL and the filter's are functions of this collection and schema generation,
      // the rule name, the filter's source and whether it was compiled for a superuser: the key
      // names those rather than the SQL, which a relation filter makes long enough that hashing it
      // was measured slow (bench/README.md, "Realtime audience keys").
      const key = `${rule}\u0000${check.kind}\u0000${check.kind === 'where' ? paramsKey(check.params) : ''}\u0000${sub.filterFor?.superuser ? 's' : ''}\u0000${sub.filterSrc ?? ''}\u0000${paramsKey(filterParams)}`;
      let a = audiences.get(key);
      if (!a) {
        const column = check.kind === 'where' && filterSql === null ? this.repo.rules.ownerColumn(c, rule) : null;
        const owner = column ? { column, field: c.fields[column.index - 3].name, principal: client.principal } : null;
        audiences.set(key, (a = { rule: check, owner, filterSql, filterParams, subs: [] }));
      }
      a.subs.push(sub);
    }
    const natives = this.topics.nativeByCollection.get(c.id);
    if (audiences.size === 0 && !natives) return;

    // The stored rows of created and updated records (expired rows are not sent), once.
    const upserts = changes.filter((ch) => ch.op !== 'delete').map((ch) => ch.id);
    const queried = [...audiences.values()].some((a) => !a.owner && !(a.rule.kind === 'all' && a.filterSql === null));
    if (!upserts.length && !queried) {
      this.send(c, changes, audiences, natives, upserts, new Map(), false);
      return;
    }
    // verdicts are for the callers as they are now: one that changes during the reads gets nothing
    for (const a of audiences.values()) a.authVersions = a.subs.map((sub) => sub.client.authVersion);
    return this.decideAndSend(c, changes, audiences, natives, upserts);
  }

  /** Reads the batch's rows, decides the groups' verdicts (through promise reads), then sends. */
  private async decideAndSend(c: Collection, changes: Change[], audiences: Map<string, Audience>, natives: Map<string, NativeGroup> | undefined, upserts: string[]): Promise<void> {
    const rows = upserts.length ? await this.visibility.rowsById(c, upserts) : new Map<string, unknown[]>();
    const costly = this.visibility.decideCostly(c, audiences, changes, upserts, rows);
    if (costly) await costly;
    const queried = this.visibility.decideQueried(c, audiences, changes, upserts, rows);
    if (queried) await queried;
    this.send(c, changes, audiences, natives, upserts, rows, true);
  }

  /**
   * Sends one collection's changes of a batch to the audiences and native topics that may see
   * them. `waited`: the verdicts were decided off the main thread, so native members whose
   * caller changed meanwhile leave their topic first (decided again with the next batch).
   */
  private send(c: Collection, changes: Change[], audiences: Map<string, Audience>, natives: Map<string, NativeGroup> | undefined, upserts: string[], rows: Map<string, unknown[]>, waited: boolean): void {
    const publish = this.topics.publisher;
    if (waited && natives) {
      for (const g of [...natives.values()]) for (const sub of [...g.members]) if (sub.client.closed || sub.client.checking || sub.nativeAuth !== sub.client.authVersion) this.topics.leaveNative(sub);
    }
    const codec = this.repo.codec(c);
    const rendered = new Map<string, string>();
    const render = (id: string, sub: Subscription): string => {
      // one rendering per record and visibility class (an auth record's email is private)
      const p = sub.client.principal;
      const full = c.type !== 'auth' || p?.superuser || (p?.collection.id === c.id && p.record.id === id);
      const key = `${full ? 'f' : 'm'}${id}`;
      let json = rendered.get(key);
      if (json === undefined) {
        const rec = codec.fromRow(rows.get(id)!);
        if (!full) hidePrivate(c, rec, null);
        json = codec.stringify(rec);
        rendered.set(key, json);
      }
      return json;
    };

    // WebSocket frames are shared by every socket with the same topic and rendering (SSE frames
    // carry the client id): built once, by topic then by the rendered record (the same string
    // object, so its hash is computed once).
    const wsFrames = new Map<string, Map<string, string>>();
    for (const ch of changes) {
      const isDelete = ch.op === 'delete';
      if (!isDelete && !rows.has(ch.id)) continue; // gone again, or expired
      const deleted = isDelete ? `{"id":${JSON.stringify(ch.id)}}` : '';
      for (const a of audiences.values()) {
        if (!this.visibility.visible(c, a, ch, upserts, rows)) continue;
        for (let i = 0; i < a.subs.length; i++) {
          const sub = a.subs[i];
          if (sub.recordId !== null && sub.recordId !== ch.id) continue;
          const client = sub.client;
          if (client.closed || client.checking) continue;
          // decided off the main thread for a caller that changed since: fail closed
          if (a.authVersions && a.authVersions[i] !== client.authVersion) continue;
          const json = isDelete ? deleted : render(ch.id, sub);
          let text: string;
          if (client.transport.kind === 'ws') {
            let byJson = wsFrames.get(sub.topic);
            if (!byJson) wsFrames.set(sub.topic, (byJson = new Map()));
            text = byJson.get(json) ?? '';
            if (text === '') byJson.set(json, (text = frame(sub, ch.op, json)));
          } else text = frame(sub, ch.op, json);
          if (client.transport.send(text)) this.stats.delivered++;
          else this.clients.lost(client);
        }
      }
      if (natives && publish) {
        for (const g of natives.values()) {
          if (g.recordId !== null && g.recordId !== ch.id) continue;
          const first = g.members.values().next().value as Subscription | undefined;
          if (!first) continue;
          const json = isDelete ? deleted : render(ch.id, first);
          publish(g.key, frame(first, ch.op, json));
          this.stats.delivered += g.members.size;
          // a publish queues without asking: members past their bound are dropped now
          for (const sub of g.members) if (!sub.client.transport.checkQueue!()) this.clients.lost(sub.client); // a Set may lose its current entry while iterated
        }
      }
    }
  }
}
