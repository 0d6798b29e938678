// The app the framework benchmark serves (bench/framework.ts): a custom JSON route, one before-
// and one after-hook on `hooked` (none on `plain`), and 10 flags and 5 experiments (2 sticky).
import { defineApp } from 'svc';

let created = 0;
export default defineApp({
  hooks: {
    records: {
      hooked: {
        beforeCreate: ({ record }) => { record.title = String(record.title).trim(); },
        afterCreate: () => { created++; },
      },
    },
  },
  routes: [{ method: 'GET', path: '/api/bench/ping', handler: () => ({ hello: 'world' }) }],
  flags: Array.from({ length: 10 }, (_, i) => ({ name: `flag-${i}`, default: i % 2 === 0 })),
  experiments: Array.from({ length: 5 }, (_, i) => ({
    name: `exp-${i}`, sticky: i < 2,
    variants: [{ name: 'control', weight: 50 }, { name: 'treatment', weight: 30 }, { name: 'other', weight: 20 }],
  })),
});
